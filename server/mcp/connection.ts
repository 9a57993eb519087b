// One MCP server seen through the official SDK client: connect (stdio or streamable HTTP), list tools, call them, reconnect with backoff.
import path from 'node:path';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type CallToolResult, type ElicitRequest, type ElicitResult, ErrorCode, McpError, type Progress, type Tool, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { z } from 'zod';
import type { McpServerConfig } from '../config';
import type { Logger } from '../logger';
import { isExecutableFile, systemBinary } from '../system-binary';
import { cappedFetch, MAX_MESSAGE_BYTES } from './limits';
import { listTools, type SkippedTool } from './listing';
import { type McpOAuth, OAuthDeclined } from './oauth';
import { routeOAuth } from './oauth-fetch';
import type { McpCallInfo } from './call-info';
import { linkingFetch, McpCalls, WireLinks } from './call-routing';

export type { McpCallInfo } from './call-info';

export type McpState = 'connecting' | 'ready' | 'failed';

/** Whether `command` names an executable file, as spawn would find it (a path, or a name on `PATH`). */
export function findsCommand(command: string, pathVar: string | undefined, cwd: string | undefined): boolean {
  if (command.includes('/')) return isExecutableFile(path.resolve(/* turbopackIgnore: true */ cwd ?? process.cwd(), command));
  return (pathVar ?? '').split(path.delimiter).some((dir) => dir !== '' && isExecutableFile(path.join(dir, command)));
}

/**
 * How a stdio MCP server is spawned: through `setpriv --pdeathsig KILL` where it is there (Linux), so the kernel kills
 * the server when the gateway dies, SIGKILL and OOM included. Without it a crashed gateway left each of its stdio
 * servers running, reparented to init, one more at every crash (server-everything and any server with a timer never
 * exits on its stdin's end). The signal reaches the direct child only: an `npx …` launcher's own child still relies on
 * its stdin closing. A command that is not found is spawned as it is, so its ENOENT reads as before, not as setpriv's.
 */
export function stdioSpawn(command: string, args: string[], pathVar: string | undefined, cwd: string | undefined): { command: string; args: string[] } {
  const wrapper = process.platform === 'linux' ? systemBinary('setpriv') : null;
  if (!wrapper || !findsCommand(command, pathVar, cwd)) return { command, args };
  return { command: wrapper, args: ['--pdeathsig', 'KILL', '--', command, ...args] };
}

export interface McpConnectionEvents {
  /** The server's tool list is known (first connect, reconnect, or a list-changed notification); `skipped`: left out. */
  onTools(tools: Tool[], skipped: SkippedTool[]): void;
  /** The server went up or down (`error` says why it is down). */
  onState(state: McpState, error?: string): void;
  /**
   * A server's `elicitation/create`: `call` is the tool call it came during (McpCalls.route: exactly over streamable
   * HTTP; otherwise only once the calls in flight are one session's), undefined when none is; `signal` ends when the
   * server cancels it or the connection closes.
   */
  onElicit?(call: McpCallInfo | undefined, params: ElicitRequest['params'], signal: AbortSignal): Promise<ElicitResult>;
}

/** Who is calling: carried to an elicitation raised during the call. */
export interface McpCallOptions {
  signal: AbortSignal;
  /** Asks the server for progress (a progressToken) and hears each notification. */
  onProgress?: (p: Progress) => void;
  /** The run's W3C trace context, sent in the request's `_meta.traceparent`. */
  traceparent?: string;
  /** Who calls (for elicitations during the call). */
  caller?: McpCallInfo;
}

import { McpUnavailable } from './unavailable';

/**
 * `elicitation/create` as the server sent it. The SDK still checks it against its ElicitRequestSchema (its Client does,
 * before the handler), but that schema's parse drops every keyword of a field it does not list (`pattern`,
 * `multipleOf`, exclusive bounds…), and the item would keep a schema the server does not check answers against: an
 * answer that fits it, refused by the server, was lost (probe C).
 */
const RAW_ELICIT_REQUEST = z.object({ method: z.literal('elicitation/create'), params: z.looseObject({}) });

export { McpUnavailable };

/** The SDK's refusal when an authorization is needed (it raised the item through the provider and gave up the request). */
const isUnauthorized = (e: unknown) => e instanceof UnauthorizedError || (e instanceof Error && e.name === 'UnauthorizedError');

const CLIENT_INFO = { name: 'crosstalk', version: '0.1.0' };
/** Elicitation in both modes (CONTRACT §5): servers that gate on it (server-everything) offer their tools. */
const CAPABILITIES = { elicitation: { form: {}, url: {} } };
/** MCP calls can be slow (a build, a search): the run's abort signal ends them, not a short SDK timeout. */
const CALL_TIMEOUT_MS = 60 * 60 * 1000;

/**
 * Output schemas are not validated: the SDK's default (Ajv) runs a server's `pattern` regexes on the event loop,
 * where a catastrophic one blocks the gateway. The result goes to the model as data either way.
 */
const noValidation: jsonSchemaValidator = { getValidator: () => (input: unknown) => ({ valid: true, data: input as never, errorMessage: undefined }) };

export class McpConnection {
  state: McpState = 'connecting';
  lastError?: string;
  private client: Client | null = null;
  private attempts = 0;
  private timer: NodeJS.Timeout | null = null;
  private pinger: NodeJS.Timeout | null = null;
  /** setpriv's "failed to execute …" line from this attempt's stderr. */
  private execFailure?: string;
  private stopped = false;
  private generation = 0;
  /** Progress listeners of calls in flight, by the progressToken we sent. */
  private readonly progress = new Map<string, (p: Progress) => void>();
  private progressSeq = 0;
  /** Calls in flight, oldest first: an elicitation goes to one of them (McpCalls.route). */
  private readonly calls = new McpCalls();
  /** The current client's links from a server request to the call whose response stream carried it. */
  private links = new WireLinks();

  constructor(
    readonly name: string,
    private readonly cfg: McpServerConfig,
    private readonly o: { log: Logger; reconnectBaseMs: number; reconnectMaxMs: number; pingIntervalMs?: number; oauth?: McpOAuth } & McpConnectionEvents,
  ) {}

  /** Ends waits on a person (an authorization item) when the connection stops. */
  private readonly stopping = new AbortController();

  /** The OAuth provider of a streamable HTTP server (absent for stdio, or without a store). */
  get oauth(): McpOAuth | undefined {
    return this.o.oauth;
  }

  /** The tool call an authorization item raised now belongs to (the oldest in flight), if any. */
  currentCall(): McpCallInfo | undefined {
    return this.calls.oldest();
  }

  /** Starts connecting in the background; failures are reported and retried, never thrown. */
  start(): Promise<void> {
    return this.connect();
  }

  private transport(links: WireLinks): Transport {
    if ('command' in this.cfg) {
      // The SDK's default environment (PATH, HOME, …) plus the configured names: never the gateway's own secrets.
      const env = { ...getDefaultEnvironment(), ...this.cfg.env };
      const cwd = this.cfg.cwd ? path.resolve(/* turbopackIgnore: true */ process.cwd(), this.cfg.cwd) : undefined;
      const t = new StdioClientTransport({
        ...stdioSpawn(this.cfg.command, this.cfg.args ?? [], env.PATH, cwd),
        env,
        cwd,
        stderr: 'pipe',
        // A line (one message) longer than this is not parsed: the transport closes, and the server is reconnected.
        maxBufferSize: MAX_MESSAGE_BYTES,
      });
      // The server's own diagnostics go to our log, a line at a time (capped), under its name.
      let buf = '';
      t.stderr?.on('data', (chunk: Buffer) => {
        buf += chunk.toString('utf8');
        let i: number;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i).trim();
          buf = buf.slice(i + 1);
          if (line) this.o.log.info({ server: this.name, stderr: line.slice(0, 2000) }, 'mcp server stderr');
          // setpriv found the command but could not execute it (a missing interpreter, a permission): its reason.
          if (line.startsWith('setpriv: failed to execute ')) this.execFailure ??= line.slice('setpriv: '.length);
        }
        if (buf.length > 8192) buf = buf.slice(-8192);
      });
      return t;
    }
    // The same cap over HTTP: a response past it is not read, the transport closes, and the server is reconnected.
    const mcp = this.withStepUp(
      linkingFetch(
        cappedFetch(MAX_MESSAGE_BYTES, () => {
          this.oversize();
          void t.close().catch(() => undefined);
        }),
        () => links,
      ),
    );
    const t: StreamableHTTPClientTransport = new StreamableHTTPClientTransport(new URL(this.cfg.url), {
      requestInit: this.cfg.headers ? { headers: this.cfg.headers } : undefined,
      // OAuth (CONTRACT §5) by the SDK: a 401 or an insufficient_scope 403 runs its flow through our provider, its
      // requests (off the MCP endpoint) through the provider's capped, timed and guarded fetch.
      ...(this.o.oauth ? { authProvider: this.o.oauth } : {}),
      fetch: this.o.oauth ? routeOAuth(this.cfg.url, mcp, this.o.oauth.oauthFetch) : mcp,
    });
    // Which call each `tools/call` request we send is (the SDK sends it here, under its id).
    const send = t.send.bind(t);
    t.send = (message, options) => {
      links.sent(message);
      return send(message, options);
    };
    return t;
  }

  /**
   * A 403 `insufficient_scope` for a scope the token lacks drops the token before the SDK sees the answer: its step-up
   * would otherwise refresh (a refresh asks for no new scope) and be refused again; without one it asks the person.
   */
  private withStepUp(f: typeof fetch): typeof fetch {
    const oauth = this.o.oauth;
    if (!oauth) return f;
    return (async (input: RequestInfo | URL, init?: RequestInit) => {
      const res = await f(input, init);
      if (res.status === 403) await oauth.stepUp(res);
      return res;
    }) as typeof fetch;
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const gen = ++this.generation;
    this.closedBecause = undefined;
    this.execFailure = undefined;
    this.setState('connecting');
    const client = new Client(CLIENT_INFO, { jsonSchemaValidator: noValidation, capabilities: CAPABILITIES });
    const links = new WireLinks();
    client.setRequestHandler(RAW_ELICIT_REQUEST, async (raw, extra) => {
      const onElicit = this.o.onElicit;
      if (!onElicit) return { action: 'decline' };
      const params = raw.params as ElicitRequest['params'];
      const log = { server: this.name };
      const route = await this.calls.route(links.callFor(extra.requestId), extra.signal, (sessions) =>
        this.o.log.warn({ ...log, sessions }, 'mcp elicitation waits: calls of several sessions are in flight on this server and MCP does not say which asked; it is asked once they are one session\'s'),
      );
      if ('refused' in route) {
        if (route.refused === 'unattributable')
          this.o.log.warn(log, 'mcp elicitation cancelled: MCP does not say which call asked, and it cannot be told (a call it may belong to ended unanswered, or several sessions\' calls may each be waiting on a question)');
        return { action: 'cancel' };
      }
      if (!route.call) return onElicit(undefined, params, extra.signal);
      return this.calls.asking(route.asker, () => onElicit(route.call, params, extra.signal));
    });
    // A list change is read again within the caps (the SDK's own refresh would read one page, with no caps).
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.refresh(client, gen));
    client.onclose = () => {
      // While connecting, the failed connect reports (an authorization refusal closes the client before it is ours).
      if (gen !== this.generation || this.stopped || this.client !== client) return;
      this.down(this.closedBecause ?? 'connection closed');
    };
    client.onerror = (e) => {
      if (/progress notification for an unknown token/.test(e.message)) return; // ours, taken by tapProgress
      // The stdio transport's read buffer refuses an oversize line this way, then closes.
      if (/ReadBuffer exceeded maximum size/.test(e.message)) this.oversize();
      // An HTTP call's response stream cut before its answer (the server died mid-call): the SDK reports it here and
      // leaves the call waiting. Asked at once whether the server is there; if not, it is down and its calls answer.
      if ('url' in this.cfg && /SSE stream disconnected|terminated|other side closed|ECONNRESET|socket hang up/i.test(e.message)) this.checkAlive(client, e.message);
      this.o.log.debug({ server: this.name, err: e.message }, 'mcp transport error');
    };
    try {
      await this.o.oauth?.freshen(this.stopping.signal);
      const transport = this.transport(links);
      // Progress is read as it arrives, before the SDK's own dispatch: that one runs notifications a microtask late,
      // so the last ones, read in the same chunk as the result, would find their call already answered and be lost.
      transport.onmessage = (m) => this.tapProgress(m);
      await client.connect(transport);
      const { tools, skipped } = await listTools(client);
      if (gen !== this.generation || this.stopped) {
        await client.close().catch(() => undefined);
        return;
      }
      this.client = client;
      this.links = links;
      this.attempts = 0;
      this.o.onTools(tools, skipped);
      this.setState('ready');
      this.o.oauth?.accepted();
      void this.o.oauth?.armRefresh();
      this.startPing(client);
    } catch (e) {
      await client.close().catch(() => undefined);
      if (gen !== this.generation) return;
      if (this.o.oauth && (isUnauthorized(e) || this.o.oauth.waiting)) return this.awaitAuthorization(gen);
      if (e instanceof Error && e.name === 'OAuthDeclined') return this.declined(e.message);
      // Not the SDK's "Connection closed" when setpriv said why the command did not start.
      this.down(this.execFailure ?? (e instanceof Error ? e.message : String(e)));
    }
  }

  /**
   * The server needs a person's authorization: it is reported down (its tools answer tool_unavailable) while the
   * `authorization` item waits; accepted, the connection is made again at once; declined, it stays down (no new item
   * is raised by itself: the next start asks again).
   */
  private async awaitAuthorization(gen: number): Promise<void> {
    const oauth = this.o.oauth!;
    this.setState('failed', `MCP server ${this.name} needs authorization: an authorization item is pending`);
    this.lastError = `MCP server ${this.name} needs authorization: open the pending authorization item`;
    try {
      await oauth.waitAuthorized(this.stopping.signal);
    } catch (e) {
      if (this.stopped || gen !== this.generation) return;
      return this.declined(e instanceof Error ? e.message : String(e));
    }
    if (this.stopped || gen !== this.generation) return;
    return this.connect();
  }

  /** A declined authorization: reported, and not asked again by itself (each retry would raise another item). */
  private declined(why: string) {
    this.lastError = why;
    this.state = 'failed';
    this.o.onState('failed', why);
    this.o.log.warn({ server: this.name, err: why }, 'mcp server authorization declined; it stays unavailable');
  }

  private tapProgress(m: unknown) {
    const msg = m as { method?: string; params?: { progressToken?: unknown; progress?: number; total?: number; message?: string } };
    if (msg.method !== 'notifications/progress' || typeof msg.params?.progressToken !== 'string') return;
    const { progressToken, ...p } = msg.params;
    if (typeof p.progress === 'number') this.progress.get(progressToken)?.(p as Progress);
  }

  /** Why the connection was closed on our side (an oversize message), for the calls it fails. */
  private closedBecause?: string;

  private oversize() {
    this.closedBecause = `the server sent a message over ${MAX_MESSAGE_BYTES} bytes; it was not read and the connection was closed`;
    this.o.log.warn({ server: this.name, cap: MAX_MESSAGE_BYTES }, 'mcp server sent an oversize message; closing its connection');
  }

  private refreshing: Promise<void> | null = null;
  private refreshAgain = false;

  /** Reads the tool list again after a list-changed notification; notifications during a read cause one more read. */
  private refresh(client: Client, gen: number): void {
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        try {
          const { tools, skipped } = await listTools(client);
          if (gen === this.generation && this.client === client) this.o.onTools(tools, skipped);
        } catch (e) {
          this.o.log.warn({ server: this.name, err: e instanceof Error ? e.message : String(e) }, 'mcp tool list refresh failed');
        }
      } while (this.refreshAgain && gen === this.generation);
    })().finally(() => (this.refreshing = null));
  }

  /** A ping now (after a broken stream): a server that does not answer is down, and the calls waiting on it fail. */
  private checkAlive(client: Client, why: string) {
    if (this.client !== client || this.o.oauth?.waiting) return;
    client.ping({ timeout: 3000 }).catch((e: unknown) => {
      if (this.client !== client || (this.o.oauth && isUnauthorized(e))) return;
      this.down(`the server went away mid-call (${why}; ping: ${e instanceof Error ? e.message : String(e)})`);
    });
  }

  /** A server that died while idle (an HTTP server has no pipe to break) is noticed by a failed ping. */
  private startPing(client: Client) {
    const every = this.o.pingIntervalMs ?? 0;
    if (!every) return;
    if (this.pinger) clearInterval(this.pinger);
    this.pinger = setInterval(() => {
      if (this.client !== client) return;
      // While an `authorization` item waits, a ping is refused too: it raised an item of its own in place of the
      // waiting call's (that one cancelled unseen) and marked the server down under the call, which then answered
      // `tool_unavailable` whatever the person did.
      if (this.o.oauth?.waiting) return;
      client.ping({ timeout: Math.max(1000, every) }).catch((e: unknown) => {
        if (this.client !== client) return;
        // Refused for want of authorization: the server is up, and the item the refusal raised is how it goes on.
        if (this.o.oauth && isUnauthorized(e)) return;
        this.down(`ping failed: ${e instanceof Error ? e.message : String(e)}`);
      });
    }, every);
    this.pinger.unref?.();
  }

  /** Marks the server down (reported once per outage) and schedules a reconnect with exponential backoff. */
  private down(error: string) {
    if (this.pinger) clearInterval(this.pinger);
    this.pinger = null;
    const client = this.client;
    this.client = null;
    this.generation++;
    void client?.close().catch(() => undefined);
    this.lastError = error;
    this.setState('failed', error);
    if (this.stopped || this.timer) return;
    const delay = Math.min(this.o.reconnectMaxMs, this.o.reconnectBaseMs * 2 ** this.attempts++);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.connect();
    }, delay);
    this.timer.unref?.();
  }

  /** The current outage (failed since the last ready) has been reported. */
  private outageReported = false;

  private setState(state: McpState, error?: string) {
    if (this.state === state && state !== 'failed') return;
    const was = this.state;
    this.state = state;
    if (state === 'ready') this.lastError = undefined;
    if (state === 'failed' && was === 'failed') return; // a retry that failed again is not news
    // Reported once per outage: each reconnect attempt goes through 'connecting', and a server that never came up
    // was reported (an `error` event, a warning) at every attempt, ~2,900 events a day at the 30 s backoff cap.
    if (state === 'failed' && this.outageReported) return;
    this.outageReported = state === 'failed' ? true : state === 'ready' ? false : this.outageReported;
    this.o.onState(state, error);
  }

  /** Calls a tool; the signal cancels the MCP request (the SDK sends notifications/cancelled). */
  async call(tool: string, args: Record<string, unknown>, o: McpCallOptions): Promise<CallToolResult> {
    const { signal } = o;
    const client = this.client;
    const links = this.links;
    if (!client || this.state !== 'ready') throw new McpUnavailable(`MCP server ${this.name} is not available${this.lastError ? `: ${this.lastError}` : ''}`);
    const end = o.caller ? this.calls.begin(o.caller) : undefined;
    /** The server answered the call's last request (a tool that answered had no question of its own left open). */
    let answered = false;
    const progressToken = o.onProgress ? `crosstalk-${++this.progressSeq}` : undefined;
    if (progressToken) this.progress.set(progressToken, o.onProgress!);
    try {
      const meta = { ...(progressToken ? { progressToken } : {}), ...(o.traceparent ? { traceparent: o.traceparent } : {}) };
      const params = { name: tool, arguments: args, ...(Object.keys(meta).length ? { _meta: meta } : {}) };
      if (o.caller) links.expect(params, o.caller);
      // A token near its expiry is refreshed first; a refused refresh or a 401/403 mid-call raises an `authorization`
      // item on this call's run, and the call waits for it and goes on (a decline throws OAuthDeclined).
      for (let attempt = 0; ; attempt++) {
        await this.o.oauth?.freshen(signal);
        try {
          const result = (await client.callTool(params, undefined, { signal, timeout: CALL_TIMEOUT_MS })) as CallToolResult;
          answered = true;
          this.o.oauth?.accepted();
          return result;
        } catch (e) {
          answered = !signal.aborted && e instanceof McpError && e.code !== ErrorCode.ConnectionClosed && e.code !== ErrorCode.RequestTimeout;
          if (o.caller?.fenced) throw o.caller.fenced;
          // URL elicitation by error (-32042): each URL it names is an `elicitation` item (mode url) on the call's
          // run; once the person has been through them all, the call is made again (MCP 2025-11-25).
          const urls = urlElicitationsOf(e);
          if (urls && !signal.aborted && attempt < 2 && this.o.onElicit && o.caller) {
            for (const p of urls) {
              const r = await this.o.onElicit(o.caller, p as never, signal);
              if (r.action !== 'accept') throw new OAuthDeclined(`MCP server ${this.name} needs a browser step the person ${r.action === 'decline' ? 'declined' : 'did not take'}: ${p.message}`);
            }
            continue;
          }
          if (signal.aborted || !this.o.oauth || attempt >= 2 || !(isUnauthorized(e) || this.o.oauth.waiting)) throw e;
          await this.o.oauth.waitAuthorized(signal);
        }
      }
    } catch (e) {
      // This process lost the session's lease (a status write was refused): the run ends; the server is not down.
      if (o.caller?.fenced) throw o.caller.fenced;
      if (signal.aborted) throw e;
      if (e instanceof Error && e.name === 'OAuthDeclined') throw e;
      // Still refused after the authorizations it asked for (a 401 after a fresh token, a scope never granted): the
      // call answers `unauthorized`; the server itself is up.
      if (this.o.oauth && (isUnauthorized(e) || ((e as { code?: unknown }).code === 401 || (e as { code?: unknown }).code === 403)) && this.client === client)
        throw new OAuthDeclined(`MCP server ${this.name} refused the call after authorization: ${e instanceof Error ? e.message : String(e)}`);
      // A protocol-level error from a live server is the tool's answer; anything else means the server is gone.
      if (e instanceof McpError && e.code !== -32000 && this.client === client) throw e;
      const why = this.closedBecause ?? (e instanceof Error ? e.message : String(e));
      if (this.client === client) this.down(why);
      throw new McpUnavailable(`MCP server ${this.name} failed during the call: ${why}`);
    } finally {
      if (progressToken) this.progress.delete(progressToken);
      if (o.caller) links.forget(o.caller);
      end?.(answered);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    this.o.oauth?.stop();
    this.generation++;
    if (this.pinger) clearInterval(this.pinger);
    this.pinger = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const c = this.client;
    this.client = null;
    await c?.close().catch(() => undefined);
  }
}

/** The URL elicitations a -32042 error (UrlElicitationRequiredError) names, or null for any other error. */
function urlElicitationsOf(e: unknown): Array<{ mode: 'url'; message: string; url: string; elicitationId?: string }> | null {
  if (!(e instanceof McpError) || e.code !== -32042) return null;
  const list = (e.data as { elicitations?: unknown } | undefined)?.elicitations;
  if (!Array.isArray(list)) return null;
  const ok = list.filter((x): x is { message: string; url: string; elicitationId?: string } => !!x && typeof x === 'object' && typeof x.url === 'string' && typeof x.message === 'string');
  return ok.length ? ok.map((x) => ({ mode: 'url' as const, message: x.message, url: x.url, ...(typeof x.elicitationId === 'string' ? { elicitationId: x.elicitationId } : {}) })) : null;
}
