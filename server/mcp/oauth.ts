// OAuth for one streamable HTTP MCP server (CONTRACT §5): the SDK's own flow (client/auth.js) over a store-backed
// OAuthClientProvider; a person authorizes through an `authorization` item, which the callback route completes.
import crypto from 'node:crypto';
import { auth, extractWWWAuthenticateParams, type OAuthClientProvider, type OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { McpOAuthConfig } from '../config';
import type { EventBus } from '../events/bus';
import type { DecidedBy } from '../events/types';
import type { Logger } from '../logger';
import { pendingRow } from '../orchestrator/approvals';
import { OPERATOR } from '../trust/trust';
import { FencedError, type Store } from '../store/store';
import type { McpCallInfo } from './call-info';
import { oauthFetch } from './oauth-fetch';
import { McpOAuthStore, type McpOAuthRow, type OAuthFields } from './oauth-store';
import { OAUTH_RUN_PREFIX } from './oauth-run';

/** Who decided an authorization item finished in the browser (the callback): the person, at the authorization server. */
const OAUTH_DECIDER: DecidedBy = { type: 'user', id: 'oauth' };

/** How often a waiting call or connection reads its item (the callback or a person may settle it on any process). */
/** A PKCE S256 code challenge (RFC 7636 §4.2), as the SDK makes it from a verifier. */
const challengeOf = (verifier: string) => crypto.createHash('sha256').update(verifier).digest('base64url');

const POLL_MS = 200;
/** A token is refreshed when less than this part of its lifetime is left (and at most a minute before it expires). */
const REFRESH_AT = 0.5;
const REFRESH_MAX_MS = 60_000;
/** Authorizations in a row the server may ask for without once accepting the token (a step-up it never grants). */
const MAX_ROUNDS = 3;


/** The person declined (or cancelled) the authorization, or the authorization server refused it. */
export class OAuthDeclined extends Error {
  override name = 'OAuthDeclined';
}

export interface McpOAuthDeps {
  server: string;
  url: string;
  cfg?: McpOAuthConfig;
  store: Store;
  bus: EventBus;
  log: Logger;
  /** crosstalk's callback route (`…/api/mcp/oauth/callback`): the redirect URI registered with the authorization server. */
  callbackUrl: string;
  /** Where an item raised outside a tool call goes: the default agent's main session, which the room opens first. */
  homeSession: string;
  /** The tool call in flight (its run owns an item raised during it), if any. */
  caller(): McpCallInfo | undefined;
  /** The registry name of a call's tool (`mcp__<server>__<tool>`). */
  toolName(call: McpCallInfo): string;
  /** `webhooks.allowPrivateNetwork`: an authorization server on a private address is allowed whatever the server's is. */
  allowPrivateNetwork?: boolean;
}

/** What the callback route answers. */
export type CallbackOutcome = { ok: true; server: string } | { ok: false; status: number; message: string; server?: string };

export class McpOAuth implements OAuthClientProvider {
  private readonly rows: McpOAuthStore;
  /** The authorization server in use (discovery's URL; the SDK stamps tokens and client information with it). */
  private issuer?: string;
  /** The `state` of the authorization URL being built (state() comes before saveCodeVerifier()). */
  private nextState?: string;
  /** The pending `authorization` item a call or the connection waits on. */
  private pendingId?: string;
  /** The pending item was raised for a tool call (not by the connection): later flows join it (`flowOpen`). */
  private pendingForCall = false;
  /** The PKCE verifier of the open authorization flow (`flowOpen`): its URL's `code_challenge` is made from it. */
  private flowVerifier?: string;
  private refreshing: Promise<void> | null = null;
  private refreshTimer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** Authorizations raised since the server last accepted a token. */
  private rounds = 0;

  /**
   * The fetch of every OAuth request, ours and the transport's (oauth-fetch.ts): capped, timed, and kept off private
   * addresses the operator did not choose.
   */
  readonly oauthFetch: typeof fetch;

  constructor(private readonly d: McpOAuthDeps) {
    this.rows = new McpOAuthStore(d.store);
    this.oauthFetch = oauthFetch(d.url, d.allowPrivateNetwork ?? false);
  }

  // ---- OAuthClientProvider (called by the SDK) ----

  get redirectUrl(): string {
    return this.d.callbackUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'crosstalk', redirect_uris: [this.d.callbackUrl], ...(this.d.cfg?.scope ? { scope: this.d.cfg.scope } : {}) };
  }

  get clientMetadataUrl(): string | undefined {
    return this.d.cfg?.clientMetadataUrl;
  }

  state(): string {
    this.nextState = crypto.randomBytes(24).toString('base64url');
    return this.nextState;
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    // Pre-registered credentials (an authorization server without registration) come from the config.
    if (this.d.cfg?.clientId) return { client_id: this.d.cfg.clientId, ...(this.d.cfg.clientSecret ? { client_secret: this.d.cfg.clientSecret } : {}) };
    return parse((await this.current())?.client_info);
  }

  async saveClientInformation(info: OAuthClientInformationMixed): Promise<void> {
    await this.put((info as { issuer?: string }).issuer, { client_info: JSON.stringify(info) });
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    return parse((await this.current())?.tokens);
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    const expires_at = typeof tokens.expires_in === 'number' ? new Date(Date.now() + tokens.expires_in * 1000).toISOString() : null;
    await this.put(tokens.issuer ?? undefined, { tokens: JSON.stringify(tokens), expires_at });
    this.d.log.info({ server: this.d.server, expiresAt: expires_at }, 'mcp oauth tokens stored');
    this.schedule(tokens, expires_at);
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    // Another flow is open (its item pending for a tool call, or being raised): a request refused meanwhile (a ping
    // sent just before the call's 401, a second call) waits on that item, it does not supersede it. Superseded, the
    // person's item was cancelled unseen and the call went on to fail (`oauth.test.ts` under load). The open flow's
    // own redirect is known by its URL's PKCE challenge, made from the verifier it saved.
    if (this.flowOpen() && url.searchParams.get('code_challenge') !== challengeOf(this.flowVerifier!)) return;
    // A server that asks again and again (insufficient_scope after every authorization) is given up on, not looped on.
    if (this.rounds >= MAX_ROUNDS) {
      this.rounds = 0;
      this.flowVerifier = undefined;
      throw new OAuthDeclined(`MCP server ${this.d.server} refused the token after ${MAX_ROUNDS} authorizations in a row; not asking again`);
    }
    this.rounds++;
    try {
      await this.raise(url);
    } catch (e) {
      if (!this.pendingId) this.flowVerifier = undefined; // no item came of it: the next refusal opens a flow again
      throw e;
    }
  }

  async saveCodeVerifier(codeVerifier: string): Promise<void> {
    // The open flow's URL keeps its verifier and state (a flow that joins it raises nothing).
    if (this.flowOpen()) return;
    this.flowVerifier = codeVerifier; // set before any await: a flow that starts meanwhile joins this one
    await this.put(undefined, { code_verifier: codeVerifier, state: this.nextState ?? null });
  }

  /**
   * Whether an authorization flow is open: its verifier saved and its item being raised, or pending for a tool call.
   * (A pending item the connection raised with no call is superseded by a call's flow, so the call's session gets it.)
   */
  private flowOpen(): boolean {
    if (this.flowVerifier === undefined) return false;
    return !this.pendingId || this.pendingForCall;
  }

  /** The pending item is gone (decided, cancelled, superseded): no flow is open any more. */
  private pendingGone(id: string): void {
    if (this.pendingId !== id) return;
    this.pendingId = undefined;
    this.flowVerifier = undefined;
  }

  async codeVerifier(): Promise<string> {
    const v = (await this.current())?.code_verifier;
    if (!v) throw new Error(`no PKCE code verifier stored for MCP server ${this.d.server}`);
    return v;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    const f: OAuthFields = {};
    if (scope === 'all' || scope === 'client') f.client_info = null;
    if (scope === 'all' || scope === 'tokens') Object.assign(f, { tokens: null, expires_at: null });
    if (scope === 'all' || scope === 'verifier') f.code_verifier = null;
    if (scope === 'all' || scope === 'discovery') f.discovery = null;
    this.d.log.info({ server: this.d.server, scope }, 'mcp oauth credentials dropped');
    await this.put(undefined, f);
  }

  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    return parse((await this.current())?.discovery);
  }

  async saveDiscoveryState(s: OAuthDiscoveryState): Promise<void> {
    this.issuer = s.authorizationServerUrl;
    await this.put(s.authorizationServerUrl, { discovery: JSON.stringify(s) });
  }

  // ---- crosstalk's side ----

  /** A 403 `insufficient_scope` naming scopes the token was not granted: the token is dropped, so the step-up authorizes anew. */
  async stepUp(res: Response): Promise<void> {
    const { error, scope } = extractWWWAuthenticateParams(res);
    if (error !== 'insufficient_scope' || !scope) return;
    const tokens = await this.tokens();
    const granted = new Set((tokens?.scope ?? '').split(' ').filter(Boolean));
    if (!tokens || scope.split(' ').every((x) => granted.has(x))) return;
    this.d.log.info({ server: this.d.server, scope, granted: [...granted] }, 'mcp server asks for more scope: authorizing again');
    await this.invalidateCredentials('tokens');
  }

  /** The server accepted the token (a connection made, a call answered): the count of authorizations in a row restarts. */
  accepted(): void {
    this.rounds = 0;
  }

  /** Whether an `authorization` item is pending: a call or connection refused with UnauthorizedError waits on it. */
  get waiting(): boolean {
    return !!this.pendingId || this.flowVerifier !== undefined;
  }

  /**
   * Refreshes the access token when it nears its expiry (once at a time); a refused refresh raises an item and waits.
   * Whether the token was due (a refresh ran).
   */
  async freshen(signal?: AbortSignal): Promise<boolean> {
    const row = await this.current();
    const tokens = parse<OAuthTokens>(row?.tokens);
    const due = !!(tokens?.refresh_token && row?.expires_at && Date.parse(row.expires_at) - Date.now() <= this.margin(tokens));
    if (due) {
      this.refreshing ??= (async () => {
        this.d.log.info({ server: this.d.server }, 'mcp oauth token near its expiry: refreshing');
        // The SDK refreshes when a refresh token is stored; one refused (invalid_grant) is dropped and a new
        // authorization starts: redirectToAuthorization raises the item.
        await auth(this, { serverUrl: this.d.url, fetchFn: this.oauthFetch });
      })().finally(() => (this.refreshing = null));
      await this.refreshing;
    }
    // A tool call does not wait on an item the connection raised on its home session (a refused background refresh):
    // out of its own session's sight, its run would show `running` with nothing to answer. It goes on, and a refusal
    // raises the call's own item on its run, superseding the connection's (redirectToAuthorization).
    if (this.pendingId && (this.pendingForCall || !this.d.caller())) await this.waitAuthorized(signal);
    return due;
  }

  /** Waits until the pending item is settled: accepted (the callback stored the tokens, or a person pressed Done), or declined (OAuthDeclined). */
  async waitAuthorized(signal?: AbortSignal): Promise<void> {
    for (;;) {
      const id = this.pendingId;
      if (!id) {
        // A flow is raising its item (another request opened it a moment ago): wait for the item, then on it.
        if (this.flowVerifier === undefined) return;
        await sleep(POLL_MS, signal);
        continue;
      }
      if (signal?.aborted) {
        const row = await this.d.store.getApproval(id);
        // An item a cancelled call raised dies with the call; the connection's own item stays for the next one.
        if (row && !row.run_id.startsWith(OAUTH_RUN_PREFIX) && (await this.d.store.settleApproval(id, 'cancelled', 'cancel', 'the tool call was cancelled'))) {
          this.emit(row.run_id, row.session_key, { phase: 'resolved', approvalId: id, decision: 'cancel', reason: 'the tool call was cancelled' });
          this.pendingGone(id);
        }
        throw signal.reason instanceof Error ? signal.reason : new Error('aborted');
      }
      const row = await this.d.store.getApproval(id);
      if (row && row.status !== 'pending') {
        if (this.pendingId !== id) continue; // superseded by a newer item: wait on that one
        this.pendingGone(id);
        // The run's own status, fenced by its session's lease: refused in a zombie (kept on the call, which then throws).
        if (!row.run_id.startsWith(OAUTH_RUN_PREFIX)) await this.d.store.updateRunFenced(row.run_id, row.session_key, { status: 'running' }).catch((e: unknown) => this.fencedCall(row.run_id, e));
        if (row.status === 'allowed') return;
        throw new OAuthDeclined(
          `authorization of MCP server ${this.d.server} was ${row.decision === 'cancel' || row.status === 'cancelled' ? 'cancelled' : 'declined'}${row.reason ? `: ${row.reason}` : ''}`,
        );
      }
      if (!row) this.pendingGone(id);
      await sleep(POLL_MS, signal);
    }
  }

  /** The callback (`GET /api/mcp/oauth/callback?code&state`): exchanges the code (PKCE, resource) and completes the item. */
  async complete(row: McpOAuthRow, q: { code?: string; error?: string; errorDescription?: string }): Promise<CallbackOutcome> {
    const server = this.d.server;
    this.issuer = row.issuer;
    const item = row.approval_id ? await this.d.store.getApproval(row.approval_id) : undefined;
    // The state is spent whatever happens: a second use of the same callback URL is refused.
    await this.put(row.issuer, { state: null, approval_id: null });
    // Its item declined or cancelled meanwhile (in crosstalk, or closed at a restart): the link is dead. No code is
    // exchanged, so no token is stored against what the record says, and the page does not say it worked. (An item a
    // person accepted with Done before the browser came back is completed as usual.)
    if (item && (item.status === 'denied' || item.status === 'cancelled')) {
      this.d.log.warn({ server, approvalId: item.id, status: item.status }, 'mcp oauth callback for an item declined or cancelled: refused');
      return { ok: false, status: 409, message: `This authorization of MCP server ${server} was already ${item.status === 'cancelled' ? 'cancelled' : 'declined'} in crosstalk; nothing was changed. Start again from a new request there.`, server };
    }
    if (q.error) {
      const reason = `the authorization server answered ${q.error}${q.errorDescription ? `: ${q.errorDescription}` : ''}`;
      // The person (or their authorization server) refused in the browser: theirs in the record (approvals.history).
      if (item) await this.settle(item.id, 'denied', 'decline', reason, OAUTH_DECIDER);
      return { ok: false, status: 400, message: `Authorization of MCP server ${server} failed: ${reason}.`, server };
    }
    if (!q.code) return { ok: false, status: 400, message: 'The callback carries no authorization code.', server };
    try {
      const result = await auth(this, { serverUrl: this.d.url, authorizationCode: q.code, fetchFn: this.oauthFetch });
      if (result !== 'AUTHORIZED') throw new Error(`the SDK answered ${result}`);
    } catch (e) {
      const reason = `the token exchange failed: ${e instanceof Error ? e.message : String(e)}`;
      this.d.log.warn({ server, err: reason }, 'mcp oauth callback failed');
      if (item) await this.settle(item.id, 'denied', 'decline', reason);
      return { ok: false, status: 502, message: `Authorization of MCP server ${server} failed: ${reason}.`, server };
    }
    await this.put(row.issuer, { code_verifier: null });
    if (item) await this.settle(item.id, 'allowed', 'accept', null, OAUTH_DECIDER);
    this.d.log.info({ server }, 'mcp oauth authorized');
    return { ok: true, server };
  }

  /** Closes items a stopped process left pending outside tool calls (their PKCE state died with the flow that made them). */
  async closeStale(): Promise<void> {
    const rows = await this.d.store.db
      .selectFrom('approvals')
      .selectAll()
      .where('status', '=', 'pending')
      .where('kind', '=', 'authorization')
      .where('run_id', 'like', `${OAUTH_RUN_PREFIX}${this.d.server}:%`)
      .execute();
    for (const r of rows) await this.settle(r.id, 'cancelled', 'cancel', 'the gateway restarted; a new item is raised when the server needs one');
  }

  stop(): void {
    this.stopped = true;
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
  }

  /** Arms the refresh of the current token shortly before it expires, so an idle server's token stays good. */
  async armRefresh(): Promise<void> {
    const row = await this.current();
    const tokens = parse<OAuthTokens>(row?.tokens);
    if (tokens) this.schedule(tokens, row?.expires_at ?? null);
  }

  private schedule(tokens: OAuthTokens, expiresAt: string | null) {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
    if (this.stopped || !tokens.refresh_token || !expiresAt) return;
    const delay = Math.max(0, Date.parse(expiresAt) - Date.now() - this.margin(tokens));
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = null;
      this.refreshDue().catch((e: unknown) => this.d.log.warn({ server: this.d.server, err: e instanceof Error ? e.message : String(e) }, 'mcp oauth background refresh failed'));
    }, Math.min(delay, 2 ** 31 - 1));
    this.refreshTimer.unref?.();
  }

  /**
   * The refresh timer fired: refreshes the token, or arms the timer again for the stored one when it is not due yet by
   * the wall clock — a timer may fire a millisecond before Date.now() says its time has come (or the clock was set back,
   * or another process refreshed the token). Dropped there, an idle server's token was never refreshed in the background.
   */
  private async refreshDue(): Promise<void> {
    if (!(await this.freshen())) await this.armRefresh();
  }

  private margin(tokens: OAuthTokens): number {
    const lifetime = typeof tokens.expires_in === 'number' ? tokens.expires_in * 1000 : 0;
    return Math.min(REFRESH_MAX_MS, lifetime * REFRESH_AT);
  }

  /** Raises the `authorization` item for an authorization URL (on the calling run, else on the home session). */
  private async raise(url: URL) {
    const { server, store } = this.d;
    const call = this.d.caller();
    const tag = crypto.randomBytes(4).toString('hex');
    const args = { server, message: `Authorize crosstalk to use the MCP server ${server} (${new URL(this.d.url).origin})`, mode: 'url', url: url.href };
    const row = pendingRow({
      sessionKey: call?.sessionKey ?? this.d.homeSession,
      // A run of its own (no such run exists) when no tool call is waiting: the connection asked.
      runId: call?.runId ?? `${OAUTH_RUN_PREFIX}${server}:${Date.now().toString(36)}${tag}`,
      // `<callId>:…`: the re-drive of an interrupted call closes the items raised during it.
      callId: call ? `${call.callId}:oauth:${tag}` : `oauth:${tag}`,
      tool: call ? this.d.toolName(call) : `mcp__${server}`,
      args,
      kind: 'authorization',
      // The calling run's trust: a chat approver whose own message started it neither gets the card nor decides it.
      ...(call?.trust ? { trust: JSON.stringify(call.trust) } : {}),
    });
    // The state the callback is bound to is stored before the item can be seen: a person who opens the URL at once (a
    // browser, a test) came back to a callback that did not know the state yet, and the call waited out its timeout.
    await this.put(undefined, { approval_id: row.id, state: url.searchParams.get('state') });
    await store.insertApproval(row);
    const before = this.pendingId;
    this.pendingId = row.id;
    this.pendingForCall = !!call;
    if (before) await this.settle(before, 'cancelled', 'cancel', 'superseded by a newer authorization item');
    this.emit(row.run_id, row.session_key, { phase: 'requested', approvalId: row.id, kind: 'authorization', tool: row.tool, args: { ...args }, callId: row.call_id, requestedAt: row.requested_at, trust: call?.trust ?? OPERATOR });
    // Fenced by the session's lease: a zombie's write is refused and its call throws (the run ends quietly).
    if (call) {
      await store.updateRunFenced(call.runId, call.sessionKey, { status: 'waiting_approval' }).catch((e: unknown) => this.fencedCall(call.runId, e));
      if (call.fenced) throw call.fenced;
    }
    this.d.log.warn({ server, approvalId: row.id, sessionKey: row.session_key }, 'mcp server needs authorization: an authorization item is pending');
  }

  /** A refused status write of a call's run (FencedError) is kept on that call if it is in flight here; other failures are let go. */
  private fencedCall(runId: string, e: unknown): void {
    if (!(e instanceof FencedError)) return;
    const call = this.d.caller();
    if (call?.runId === runId) call.fenced ??= e;
  }

  /** `by`: who decided, for the record; none when the gateway closed the item itself (no one decided it). */
  private async settle(id: string, status: string, decision: string, reason: string | null, by?: DecidedBy) {
    if (!(await this.d.store.settleApproval(id, status, decision, reason, undefined, by))) return;
    const row = await this.d.store.getApproval(id);
    if (row) this.emit(row.run_id, row.session_key, { phase: 'resolved', approvalId: id, decision, ...(reason ? { reason } : {}), ...(by ? { by } : {}) });
  }

  /** An `approval` event on the item's run: a run of a tool call is registered already; the connection's is registered for the event. */
  private emit(runId: string, sessionKey: string, data: Record<string, unknown>) {
    try {
      if (runId.startsWith(OAUTH_RUN_PREFIX)) {
        this.d.bus.registerRun(runId, sessionKey, 0);
        this.d.bus.emit(runId, 'approval', data);
        this.d.bus.unregisterRun(runId);
      } else this.d.bus.emit(runId, 'approval', data);
    } catch (e) {
      this.d.log.warn({ server: this.d.server, err: e instanceof Error ? e.message : String(e) }, 'could not emit the authorization event');
    }
  }

  /** The row of the authorization server in use (else the newest). */
  private async current(): Promise<McpOAuthRow | undefined> {
    const rows = await this.rows.rows(this.d.server, this.d.url);
    const row = (this.issuer ? rows.find((r) => r.issuer === this.issuer) : undefined) ?? rows[0];
    if (row && !this.issuer) this.issuer = row.issuer;
    return row;
  }

  private async put(issuer: string | undefined, fields: OAuthFields) {
    const iss = issuer ?? this.issuer ?? (await this.current())?.issuer ?? '';
    if (issuer) this.issuer = issuer;
    await this.rows.put(this.d.server, iss, this.d.url, fields);
  }
}

function parse<T>(s: string | null | undefined): T | undefined {
  if (!s) return undefined;
  try {
    return JSON.parse(s) as T;
  } catch {
    return undefined;
  }
}

function sleep(ms: number, signal?: AbortSignal) {
  return new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
