// The MCP client side (CONTRACT §5 "MCP tools"): every configured server's tools enter the tool registry as `mcp__<server>__<tool>`.
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { CrosstalkConfig, McpOAuthConfig } from '../config';
import { errorMessage, toolError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Logger } from '../logger';
import { invalidateFunctionTools } from '../orchestrator/model-step';
import { mainSessionKey } from '../sessions/keys';
import { trustOf } from '../trust/trust';
import type { AnyToolDef } from '../tools/types';
import type { Store } from '../store/store';
import type { McpCallInfo } from './call-info';
import type { McpConnection, McpState } from './connection';
import { McpUnavailable } from './unavailable';
import { Elicitations } from './elicitation';
import type { SkippedTool } from './listing';
import { toToolData } from './results';
import type { CallbackOutcome, McpOAuth, OAuthDeclined } from './oauth';
import { McpOAuthStore } from './oauth-store';

export interface McpServerStatus {
  server: string;
  state: McpState;
  tools: number;
  error?: string;
  /** Tools of the server left out of the registry (unusable schema, a name taken, over a cap), and why. */
  skipped?: SkippedTool[];
}

const argsSchema = z.record(z.string(), z.unknown());

/** `mcp__<server>__<tool>`, with characters a model's function name cannot hold replaced by `_`. */
export function mcpToolName(server: string, tool: string): string {
  return `mcp__${server}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 128);
}

export class McpManager {
  private readonly conns = new Map<string, McpConnection>();
  /** The SDK client (./connection, ./oauth) loads only when servers are configured, in the background like the connections. */
  private loading: Promise<void> | undefined;
  private sdk?: { McpConnection: typeof McpConnection; McpOAuth: typeof McpOAuth; OAuthDeclined: typeof OAuthDeclined };
  /** Registry names each server currently owns, so a list change can drop the tools that left. */
  private readonly owned = new Map<string, Set<string>>();
  /** What the newest listing of each server left out. */
  private readonly skipped = new Map<string, SkippedTool[]>();

  /** Elicitations raised during calls; absent without a store (no session to ask on: the server is declined). */
  private readonly elicitations?: Elicitations;

  constructor(
    private readonly o: { config: CrosstalkConfig; tools: Map<string, AnyToolDef>; bus: EventBus; log: Logger; store?: Store },
  ) {
    if (o.store) this.elicitations = new Elicitations({ store: o.store, bus: o.bus, log: o.log });
  }

  /** Connects to every server in the background: a server that fails never holds up or stops the gateway. */
  start(): void {
    if (Object.keys(this.o.config.mcp.servers).length === 0) return;
    this.loading = Promise.all([import('./connection'), import('./oauth')]).then(
      ([c, o]) => {
        this.sdk = { McpConnection: c.McpConnection, McpOAuth: o.McpOAuth, OAuthDeclined: o.OAuthDeclined };
        this.connect();
      },
      (e) => this.o.log.error({ err: e }, 'could not load the MCP client'),
    );
  }

  private connect(): void {
    const { servers, reconnectBaseMs, reconnectMaxMs, pingIntervalMs } = this.o.config.mcp;
    const { McpConnection: Connection } = this.sdk!;
    for (const [name, cfg] of Object.entries(servers)) {
      const oauth = 'url' in cfg ? this.oauthFor(name, cfg.url, cfg.oauth, () => conn) : undefined;
      const conn: McpConnection = new Connection(name, cfg, {
        oauth,
        log: this.o.log,
        reconnectBaseMs,
        reconnectMaxMs,
        pingIntervalMs,
        onTools: (tools, skipped) => this.setTools(name, tools, skipped),
        onState: (state, error) => this.report(name, state, error),
        onElicit: async (call, params, signal) =>
          this.elicitations ? this.elicitations.ask(name, call ? mcpToolName(name, call.tool) : '', call, params, signal) : { action: 'decline' },
      });
      this.conns.set(name, conn);
      void (async () => {
        await oauth?.closeStale().catch((e: unknown) => this.o.log.warn({ server: name, err: errorMessage(e) }, 'could not close stale authorization items'));
        await conn.start();
      })();
    }
  }

  /** Resolves once every server has been tried at least once (tests, and a start that wants its tools listed). */
  async ready(timeoutMs = 10_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    await this.loading;
    while ([...this.conns.values()].some((c) => c.state === 'connecting') && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  }

  /** A streamable HTTP server's OAuth provider (store-backed: needs the store; without one a 401 is an error). */
  private oauthFor(server: string, url: string, cfg: McpOAuthConfig | undefined, conn: () => McpConnection): McpOAuth | undefined {
    const { store, config, bus, log } = this.o;
    if (!store || !this.sdk) return undefined;
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    return new this.sdk.McpOAuth({
      server,
      url,
      cfg,
      store,
      bus,
      log,
      callbackUrl: config.mcp.callbackUrl ?? `http://${host.includes(':') ? `[${host}]` : host}:${config.port}/api/mcp/oauth/callback`,
      homeSession: mainSessionKey(config.defaultAgentId),
      caller: () => conn().currentCall(),
      toolName: (call) => mcpToolName(server, call.tool),
      allowPrivateNetwork: config.webhooks.allowPrivateNetwork,
    });
  }

  /**
   * The OAuth callback (`GET /api/mcp/oauth/callback`): public, bound to the `state` of a pending authorization; it
   * exchanges the code and completes the item, and the waiting call or connection goes on.
   */
  async oauthCallback(q: { state?: string | null; code?: string | null; error?: string | null; errorDescription?: string | null }): Promise<CallbackOutcome> {
    if (!q.state) return { ok: false, status: 400, message: 'The callback carries no state.' };
    if (!this.o.store) return { ok: false, status: 404, message: 'No authorization is in progress.' };
    await this.loading;
    const row = await new McpOAuthStore(this.o.store).byState(q.state);
    const oauth = row ? this.conns.get(row.server)?.oauth : undefined;
    if (!row || !oauth) return { ok: false, status: 400, message: 'No authorization is in progress for this state (it was used already, or replaced by a newer one).' };
    return oauth.complete(row, { code: q.code ?? undefined, error: q.error ?? undefined, errorDescription: q.errorDescription ?? undefined });
  }

  status(): McpServerStatus[] {
    // While the client loads, every configured server is still connecting.
    if (this.loading && this.conns.size === 0) return Object.keys(this.o.config.mcp.servers).map((server) => ({ server, state: 'connecting' as const, tools: 0 }));
    return [...this.conns.values()].map((c) => ({
      server: c.name,
      state: c.state,
      tools: this.owned.get(c.name)?.size ?? 0,
      ...(c.lastError ? { error: c.lastError } : {}),
      ...(this.skipped.get(c.name)?.length ? { skipped: this.skipped.get(c.name) } : {}),
    }));
  }

  async stop(): Promise<void> {
    await this.loading;
    await Promise.all([...this.conns.values()].map((c) => c.stop()));
  }

  private report(server: string, state: McpState, error?: string) {
    const { log, bus } = this.o;
    if (state === 'failed') log.warn({ server, err: error }, 'mcp server unavailable; its tools answer tool_unavailable until it is back');
    else if (state === 'ready') log.info({ server, tools: this.owned.get(server)?.size ?? 0 }, 'mcp server ready');
    // A failure is an event on the default agent's main session, which the room opens first. Being ready is not: the
    // log and the status panel show it, and §4's lifecycle phases belong to runs.
    if (state !== 'failed') return;
    this.emit(server, (id) => bus.emit(id, 'error', { code: 'tool_unavailable', source: 'mcp', server, message: `MCP server ${server} is unavailable: ${error ?? 'unknown error'}` }));
  }

  /** An event about a server, on the default agent's main session (the room opens it first). */
  private emit(server: string, fn: (id: string) => void) {
    const { log, bus, config } = this.o;
    try {
      const id = `evt_mcp_${server}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
      bus.registerRun(id, mainSessionKey(config.defaultAgentId), 0);
      fn(id);
      bus.unregisterRun(id);
    } catch (e) {
      log.error({ err: e }, 'could not emit the mcp server state');
    }
  }

  private setTools(server: string, tools: Tool[], listed: SkippedTool[] = []) {
    const reg = this.o.tools;
    const before = this.owned.get(server) ?? new Set<string>();
    const now = new Set<string>();
    const skipped = [...listed];
    // Names that collide once sanitised (`a.b`, `a_b`) would overwrite each other: the tool whose name needs no
    // change keeps it, else the first listed; the others are refused, as is a name another server already holds.
    const exact = new Set(tools.map((t) => t.name).filter((n) => mcpToolName(server, n) === `mcp__${server}__${n}`));
    const ordered = [...tools].sort((a, b) => Number(exact.has(b.name)) - Number(exact.has(a.name)));
    for (const t of ordered) {
      const name = mcpToolName(server, t.name);
      const other = reg.get(name)?.source;
      if (now.has(name)) {
        skipped.push({ tool: t.name, reason: `its name becomes ${name}, which another tool of this server already has` });
        continue;
      }
      if (other?.kind === 'mcp' && other.server !== server) {
        skipped.push({ tool: t.name, reason: `its name becomes ${name}, which MCP server ${other.server} already has` });
        continue;
      }
      now.add(name);
      reg.set(name, this.toolDef(server, name, t));
    }
    for (const gone of before) if (!now.has(gone)) reg.delete(gone);
    this.owned.set(server, now);
    this.skipped.set(server, skipped);
    invalidateFunctionTools(reg);
    this.o.log.info({ server, tools: [...now] }, 'mcp tools registered');
    if (skipped.length) {
      this.o.log.warn({ server, skipped }, 'mcp tools left out; the rest of the server is offered');
      this.emit(server, (id) =>
        this.o.bus.emit(id, 'error', { code: 'tool_unavailable', source: 'mcp', server, message: `MCP server ${server}: ${skipped.length} tool(s) left out`, skipped: skipped.map((x) => ({ ...x })) }),
      );
    }
  }

  private toolDef(server: string, name: string, t: Tool): AnyToolDef {
    const annotations = t.annotations ? { ...t.annotations } : undefined;
    return {
      name,
      description: `[MCP ${server}] ${t.description ?? t.title ?? t.name}`.slice(0, 2048),
      inputSchema: argsSchema,
      jsonSchema: { ...t.inputSchema, type: 'object' },
      visibleTo: (agent) => !agent.mcp || agent.mcp.includes(server),
      source: { kind: 'mcp', server, tool: t.name, ...(annotations ? { annotations } : {}) },
      execute: async (args: Record<string, unknown>, ctx) => {
        const conn = this.conns.get(server);
        if (!conn) return toolError('tool_unavailable', `MCP server ${server} is not configured`);
        // Progress from the server becomes `tool` `update` events on the card; the run's trace travels in `_meta`.
        const onProgress = (p: { progress: number; total?: number; message?: string }) =>
          this.o.bus.emit(ctx.runId, 'tool', { phase: 'update', name, callId: ctx.callId, progress: { progress: p.progress, ...(p.total !== undefined ? { total: p.total } : {}), ...(p.message !== undefined ? { message: p.message } : {}) } });
        try {
          const caller: McpCallInfo = { runId: ctx.runId, sessionKey: ctx.sessionKey, callId: ctx.callId, tool: t.name, trust: trustOf(ctx.origin), signal: ctx.signal };
          try {
            const result = await conn.call(t.name, args, { signal: ctx.signal, onProgress, traceparent: ctx.traceparent, caller });
            // A status write of the call's elicitation was refused (FencedError): the run ends quietly, no result.
            if (caller.fenced) throw caller.fenced;
            return toToolData(result);
          } catch (e) {
            throw caller.fenced ?? e;
          }
        } catch (e) {
          if (e instanceof Error && e.name === 'FencedError') throw e;
          if (ctx.signal.aborted) return toolError('interrupted', 'run interrupted: the MCP request was cancelled');
          if (e instanceof McpUnavailable) return toolError('tool_unavailable', e.message);
          if (this.sdk && e instanceof this.sdk.OAuthDeclined) return toolError('unauthorized', `MCP ${server}/${t.name}: ${e.message}`);
          return protocolError(`MCP ${server}/${t.name}`, e);
        }
      },
    };
  }
}

/** The SDK's own timeout of a request (McpError -32001): no answer came, which is no answer of the server's. */
const REQUEST_TIMEOUT = -32001;
/** A server's message in a tool's error, at most this long (as a tool's `isError` text is, results.ts). */
const MAX_ERROR_CHARS = 4096;

/**
 * What a tool call answers when the live server answered it with a JSON-RPC error (CONTRACT §6): `tool_error`, the
 * server's own message kept (capped), as for a result flagged `isError`; before, `invalid_request`, as if the model's
 * call were malformed. A request that timed out is `timeout`; a server that is down is `tool_unavailable` (above).
 */
function protocolError(what: string, e: unknown) {
  const code = (e as { code?: unknown }).code;
  const message = `${what}: ${protocolErrorText(e)}`.slice(0, MAX_ERROR_CHARS);
  if (code === REQUEST_TIMEOUT) return toolError('timeout', message);
  return toolError(typeof code === 'number' ? 'tool_error' : 'internal', message);
}

/**
 * A server's protocol error as the tool's answer says it. The SDK's McpError prefixes its message with "MCP error
 * <code>: ", and a server built on the SDK sends that prefixed message, so the client's error carries it twice.
 */
export function protocolErrorText(e: unknown): string {
  return errorMessage(e).replace(/^(MCP error (-?\d+): )(?:MCP error \2: )+/, '$1');
}
