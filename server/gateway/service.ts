// The gateway service: the methods of CONTRACT §3 over the store and orchestrator (transports stay thin).
import type { CrosstalkConfig } from '../config';
import { CrosstalkError } from '../errors';
import type { EventBus } from '../events/bus';
import type { SessionKind, SessionSummary } from '../events/types';
import { validateModelSpec } from '../models/registry';
import { toApprovalRecord, toPendingApproval } from '../orchestrator/approvals';
import { newRunId } from '../orchestrator/queue';
import type { DecidedBy } from '../events/types';
import type { Orchestrator } from '../orchestrator/orchestrator';
import { toolPolicyFor } from '../config';
import { decodeCursor, encodeCursor } from '../store/cursor';
import type { SessionRow } from '../store/schema';
import { type Store, toTranscriptMessage } from '../store/store';
import type { AnyToolDef } from '../tools/types';
import { checkWebhookUrl } from '../webhooks/guard';
import { activeRunIds, pageParents, parentChains, searchSessions } from './room';
import { runsBoard } from './board';
import { deliveriesForCall, deliveriesGet, deliveriesList, deliveriesRetry } from './deliveries';
import { newDeliveryId } from '../store/deliveries';
import type {
  SessionsSearchParams,
  AgentParams,
  AgentWaitParams,
  AgentCancelParams,
  ApprovalsListParams,
  ApprovalsResolveParams,
  ApprovalsHistoryParams,
  RunsBoardParams,
  DeliveriesGetParams,
  DeliveriesListParams,
  DeliveriesRetryParams,
  ChatHistoryParams,
  SessionsDeleteParams,
  SessionsListParams,
  SessionsPatchParams,
  WebhooksListParams,
  DelegatesListParams,
  DelegatesMessagesParams,
  DelegatesDismissParams,
  DelegatesResumeParams,
} from './schemas';
import type { Delegates, DelegateRunResult } from '../orchestrator/delegates';
import type { AgentDeliveredParams, AgentInfo, AgentResult, EventSubscribeOptions, Gateway, StatusSummary, WebhookInfo } from './types';
import type { Metrics } from '../metrics';
import type { ChannelService, SendParams } from '../channels';
import type { McpServerStatus } from '../mcp/manager';
import type { PairingsResolveParams } from '../trust/pairing';
import type { Usage } from '../usage/usage';
import type { Compactor } from '../orchestrator/compaction';
import { compactSession } from './compact';
import { Claimant } from '../store/idempotency';
import { acceptKeyed } from './keyed-accept';
import type { PushService } from '../push/service';
import type { PushSubscribeParams, PushUnsubscribeParams } from '../push/schemas';

/** The text a `chat.history` page holds at most (its rows' content, tool arguments and results; one row at least). */
export const HISTORY_PAGE_CHARS = 4 * 1024 * 1024;

export interface ServiceDeps {
  config: CrosstalkConfig;
  store: Store;
  bus: EventBus;
  orchestrator: Orchestrator;
  tools: Map<string, AnyToolDef>;
  delegates: Delegates;
  metrics: Metrics;
  channels: ChannelService;
  cluster?: import('../cluster/cluster').Cluster | null;
  /** MCP servers' states for the status panel (server/mcp). */
  mcpStatus?: () => McpServerStatus[];
  usage?: Usage;
  compactor?: Compactor;
  /** Web Push (server/push): subscriptions and the VAPID key. */
  push?: PushService;
  log?: import('../logger').Logger;
}

export class GatewayService implements Gateway {
  private inflight = new Map<string, Promise<AgentResult>>();

  constructor(private readonly d: ServiceDeps) {
    this.claimant = new Claimant(d.store.db, () => d.cluster?.id || null);
  }

  /** Idempotency keys' claimant: this process (CONTRACT §3: a key holds across processes and crashes). */
  private readonly claimant: Claimant;

  async agent(p: AgentParams): Promise<AgentResult> {
    const { idempotencyKey } = p;
    if (!idempotencyKey) return this.startAgent(p);
    const key = `agent:${idempotencyKey}`;
    const running = this.inflight.get(key);
    if (running) return running;
    const work = this.agentClaimed(p, key);
    this.inflight.set(key, work);
    try {
      return await work;
    } finally {
      this.inflight.delete(key);
    }
  }

  /** `agent` with an idempotency key: accepted once, across processes, crashes and a lost connection (./keyed-accept.ts). */
  private agentClaimed(p: AgentParams, key: string): Promise<AgentResult> {
    return acceptKeyed({ claimant: this.claimant, store: this.d.store, clustered: !!this.d.cluster, start: (claim) => this.startAgent(p, claim), log: this.d.log }, key);
  }

  private async startAgent(p: AgentParams, claim?: { key: string; owner: string }): Promise<AgentResult> {
    if (p.webhook) {
      const refused = await checkWebhookUrl(p.webhook.url, this.d.config.webhooks.allowPrivateNetwork);
      if (refused) throw new CrosstalkError('invalid_request', refused, [{ path: 'webhook.url', message: refused }]);
    }
    return this.d.orchestrator.submit(
      p.sessionKey,
      { content: p.message, kind: 'message', author: { type: 'user', id: 'user' } },
      { queueMode: p.queueMode, webhook: p.webhook, ...(claim ? { claim } : {}) },
    );
  }

  /**
   * A message from another agent outside that is a hand-off of its own (MCP `crosstalk_send`, CONTRACT §10; an A2A
   * `message/send`, §8): `agent` with a `session_message` delivery record that its run moves on like any other (§9).
   */
  async agentDelivered(p: AgentDeliveredParams): Promise<AgentResult & { deliveryId: string }> {
    this.d.orchestrator.agentForKey(p.sessionKey); // unknown_agent before anything is recorded
    const deliveryId = newDeliveryId();
    // The target run's id is the delivery's from the start (§9 `runId`), as for `sessions_send`.
    const runId = newRunId();
    await this.d.store.createDeliveries([{ id: deliveryId, kind: 'session_message', to: { sessionKey: p.sessionKey }, runId }]);
    try {
      const author = p.author ?? { type: 'user', id: 'user' };
      const res = await this.d.orchestrator.submit(p.sessionKey, { content: p.message, kind: 'message', author, meta: { ...p.meta, deliveryId } }, { origin: { ...p.origin, deliveryId }, runId });
      if (res.runId !== runId) await this.d.store.setDeliveryRun(deliveryId, res.runId); // steered or collected: that run
      return { ...res, deliveryId };
    } catch (e) {
      await this.d.store.advanceDeliveries([deliveryId], 'failed', { error: { code: (e as { code?: string }).code ?? 'internal', message: (e as Error).message }, runId: null });
      throw e;
    }
  }

  send(p: SendParams) {
    return this.d.channels.send(p);
  }

  async agentWait(p: AgentWaitParams) {
    const w = await this.d.orchestrator.wait(p.runId, p.timeoutMs ?? 30_000);
    if (w.status === 'timeout' || !this.d.usage) return w;
    const hit = this.d.usage.recentRun(p.runId);
    if (hit) return { ...w, usage: hit };
    // A steered message's run id: its usage is the run it was merged into. A run that ended with steered messages in it
    // points at their follow-up too (continuedIn), but its usage is its own: the follow-up's is not counted twice.
    const row = await this.d.store.getRun(p.runId);
    return { ...w, usage: await this.d.usage.forRun(row?.status === 'merged' && row.merged_into ? row.merged_into : p.runId) };
  }

  async sessionsCompact(p: { sessionKey: string }) {
    await this.mustSession(p.sessionKey);
    if (!this.d.compactor) throw new CrosstalkError('internal', 'compaction is not available');
    return compactSession(this.d, p.sessionKey);
  }

  async sessionsUsage(p: { sessionKey: string }) {
    await this.mustSession(p.sessionKey);
    if (!this.d.usage) throw new CrosstalkError('internal', 'usage accounting is not available');
    return this.d.usage.forSession(p.sessionKey);
  }

  async agentCancel(p: AgentCancelParams): Promise<{ status: 'ok' }> {
    await this.d.orchestrator.cancel(p.runId, p.reason);
    return { status: 'ok' };
  }

  private summary(r: SessionRow): SessionSummary {
    const agent = this.d.orchestrator.agent(r.agent_id);
    return {
      sessionKey: r.key,
      agentId: r.agent_id,
      kind: r.kind as SessionKind,
      ...(r.label ? { label: r.label } : {}),
      model: r.model ?? agent?.models[0] ?? 'scripted',
      lastActivityAt: r.last_activity_at,
      status: r.status === 'running' ? 'running' : 'idle',
      messageCount: r.message_count,
      ...(r.parent_key ? { parentKey: r.parent_key } : {}),
      ...(r.queue_mode ? { queueMode: r.queue_mode } : {}),
      ...(r.thinking_level ? { thinkingLevel: r.thinking_level } : {}),
      spawnDepth: r.spawn_depth,
    };
  }

  /** Pending approvals per session, counted on the session and on every ancestor (a delegate's approval marks its parent). */
  private async attention(): Promise<Map<string, number>> {
    const pending = await this.d.store.pendingApprovals();
    const counts = new Map<string, number>();
    if (!pending.length) return counts;
    // Every tree walked up in one statement (parentChains), not a getSession per session and ancestor: the room's
    // sessions.list (polled every 5 s by each open room) made one sequential read per pending approval and tree level.
    const chains = await parentChains(this.d.store, pending.map((a) => a.session_key));
    for (const a of pending) for (const key of chains.get(a.session_key) ?? [a.session_key]) counts.set(key, (counts.get(key) ?? 0) + 1);
    return counts;
  }

  /**
   * `attention` adds each session's pending-approval count (its own and its delegates') and `parents`, the sessions
   * above the page's delegates that the page does not hold (room.ts pageParents): the room asks for them, JSON-RPC
   * does not.
   */
  async sessionsList(p: SessionsListParams, o: { attention?: boolean } = {}) {
    const limit = p.limit ?? 50;
    const scope = `${p.agentId ?? ''}|${p.kind ?? ''}`;
    const after = p.cursor ? (decodeCursor(p.cursor, 'sessions', scope, 2) as [string, string]) : undefined;
    const rows = await this.d.store.listSessions({ limit: limit + 1, after, agentId: p.agentId, kind: p.kind });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const attention = o.attention ? await this.attention() : null;
    const shown = (r: SessionRow) => (attention ? { ...this.summary(r), pendingApprovals: attention.get(r.key) ?? 0 } : this.summary(r));
    return {
      sessions: page.map(shown),
      next_cursor: rows.length > limit && last ? encodeCursor('sessions', scope, [last.last_activity_at, last.key]) : null,
      ...(attention ? { parents: (await pageParents(this.d.store, page)).map(shown) } : {}),
    };
  }

  private async mustSession(key: string): Promise<SessionRow> {
    const row = await this.d.store.getSession(key);
    if (!row) throw new CrosstalkError('unknown_session', `no session ${key}`);
    return row;
  }

  async sessionsGet(sessionKey: string) {
    return this.summary(await this.mustSession(sessionKey));
  }

  async sessionsPatch(p: SessionsPatchParams) {
    if (p.model) {
      const err = validateModelSpec(p.model);
      if (err) throw new CrosstalkError('invalid_request', err, [{ path: 'model', message: err }]);
    }
    await this.mustSession(p.sessionKey);
    const fields: Parameters<Store['patchSession']>[1] = {};
    if (p.model !== undefined) fields.model = p.model;
    if (p.thinkingLevel !== undefined) fields.thinking_level = p.thinkingLevel;
    if (p.label !== undefined) fields.label = p.label || null;
    if (p.spawnDepth !== undefined) fields.spawn_depth = p.spawnDepth;
    if (p.queueMode !== undefined) fields.queue_mode = p.queueMode;
    return this.summary((await this.d.store.patchSession(p.sessionKey, fields))!);
  }

  async sessionsDelete(p: SessionsDeleteParams) {
    await this.mustSession(p.sessionKey);
    await this.d.orchestrator.dropSession(p.sessionKey);
    await this.d.store.deleteSession(p.sessionKey, p.deleteTranscript ?? false);
    return { status: 'ok' as const };
  }

  async chatHistory(p: ChatHistoryParams) {
    const limit = p.limit ?? 50;
    const includeTools = p.includeTools ?? false;
    const scope = `${p.sessionKey}|${includeTools ? 't' : ''}`;
    const beforeId = p.cursor ? (decodeCursor(p.cursor, 'history', scope, 1)[0] as number) : undefined;
    await this.mustSession(p.sessionKey);
    const rows = await this.d.store.history({ sessionKey: p.sessionKey, limit: limit + 1, beforeId, includeTools });
    // At most HISTORY_PAGE_CHARS of text a page (always one row at least); the cursor goes on from there. 200 rows of
    // 200 KB were a 27 MB answer whose building held the event loop for seconds, every other request with it (probe F).
    let size = 0;
    let n = 0;
    while (n < Math.min(limit, rows.length)) {
      const r = rows[n]!;
      size += r.content.length + (r.tool_args?.length ?? 0) + (r.tool_result?.length ?? 0);
      if (n > 0 && size > HISTORY_PAGE_CHARS) break;
      n++;
    }
    const page = rows.slice(0, n);
    const last = page[page.length - 1];
    return {
      messages: page.map(toTranscriptMessage),
      next_cursor: rows.length > n && last ? encodeCursor('history', scope, [last.id]) : null,
    };
  }

  /**
   * Pending items; with `sessionKey`, that session's and its delegates' (CONTRACT §4: a delegate's pending approval is
   * also shown on its parent). `own`: that session's alone (the room's toolbox, whose cards are that session's calls).
   */
  async approvalsList(p: ApprovalsListParams, o: { own?: boolean } = {}) {
    const rows = await this.d.store.pendingApprovals(o.own ? { sessionKey: p.sessionKey } : { under: p.sessionKey });
    const chains = await parentChains(this.d.store, rows.map((r) => r.session_key));
    return {
      approvals: rows.map((r) => {
        const source = this.d.tools.get(r.tool)?.source;
        const base = { ...toPendingApproval(r), chain: chains.get(r.session_key) ?? [r.session_key] };
        return source ? { ...base, source } : base;
      }),
    };
  }

  async sessionsSearch(p: SessionsSearchParams) {
    return searchSessions(this.d.store, p);
  }

  async sessionActiveRuns(sessionKey: string) {
    return { runIds: await activeRunIds(this.d.store, sessionKey) };
  }

  runsBoard(p: RunsBoardParams) {
    return runsBoard(this.d.store, p, (agentId) => this.d.config.agents.find((a) => a.id === agentId)?.budget);
  }

  deliveriesGet(p: DeliveriesGetParams) {
    return deliveriesGet(this.d.store, p);
  }

  deliveriesList(p: DeliveriesListParams) {
    return deliveriesList(this.d.store, p);
  }

  deliveriesForCall(p: { runId: string; callId: string }) {
    return deliveriesForCall(this.d.store, p);
  }

  deliveriesRetry(p: DeliveriesRetryParams) {
    return deliveriesRetry(this.d.store, p);
  }

  private pushService(): PushService {
    if (!this.d.push) throw new CrosstalkError('internal', 'push is not running in this process');
    return this.d.push;
  }

  pushVapidKey() {
    return this.pushService().vapidKey();
  }

  pushSubscribe(p: PushSubscribeParams) {
    return this.pushService().subscribe(p.subscription);
  }

  pushUnsubscribe(p: PushUnsubscribeParams) {
    return this.pushService().unsubscribe(p.endpoint);
  }

  async approvalsResolve(p: ApprovalsResolveParams, by: DecidedBy) {
    await this.d.orchestrator.approvals.resolve(p.approvalId, p.decision, p.reason, by, p.content);
    return { status: 'ok' as const };
  }

  async approvalsHistory(p: ApprovalsHistoryParams) {
    const limit = p.limit ?? 50;
    const scope = p.sessionKey ?? '*';
    // Validation before lookup: a cursor of another list (or scope) is invalid_cursor.
    const before = p.cursor ? (decodeCursor(p.cursor, 'approvals_history', scope, 2) as [string, string]) : undefined;
    const rows = await this.d.store.approvalHistory({ sessionKey: p.sessionKey, limit: limit + 1, ...(before ? { before } : {}) });
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      approvals: page.map(toApprovalRecord),
      next_cursor: rows.length > limit && last ? encodeCursor('approvals_history', scope, [last.resolved_at!, last.id]) : null,
    };
  }

  async agentsList(): Promise<{ agents: AgentInfo[] }> {
    return {
      agents: this.d.config.agents.map((a) => ({
        agentId: a.id,
        name: a.name,
        persona: a.persona,
        model: a.models.length === 1 ? a.models[0]! : a.models,
        tools: Object.fromEntries([...this.d.tools.values()].filter((t) => t.visibleTo?.(a) ?? true).map((t) => [t.name, toolPolicyFor(a, t.name)])),
        ...(a.a2a ? { remote: { a2a: a.a2a.url } } : {}),
        mcpTools: [...this.d.tools.values()]
          .filter((t) => t.source?.kind === 'mcp' && (t.visibleTo?.(a) ?? true))
          .map((t) => ({ name: t.name, server: t.source!.server, tool: t.source!.tool, policy: toolPolicyFor(a, t.name), ...(t.source!.annotations ? { annotations: t.source!.annotations } : {}) })),
      })),
    };
  }

  async delegatesList(p: DelegatesListParams) {
    const limit = p.limit ?? 3;
    if (p.cursor) decodeCursor(p.cursor, 'delegates', p.sessionKey, 2); // validation before lookup
    await this.mustSession(p.sessionKey);
    return this.d.delegates.list(p.sessionKey, { cursor: p.cursor, limit });
  }

  async delegatesMessages(p: DelegatesMessagesParams) {
    if (p.cursor) decodeCursor(p.cursor, 'delegate_messages', p.conversation_id, 1);
    await this.mustSession(p.sessionKey);
    return this.d.delegates.messages(p.sessionKey, p.conversation_id, { cursor: p.cursor, limit: p.limit });
  }

  async delegatesDismiss(p: DelegatesDismissParams) {
    await this.mustSession(p.sessionKey);
    return this.d.delegates.dismiss(p.sessionKey, p.conversation_id);
  }

  async delegatesResume(p: DelegatesResumeParams): Promise<DelegateRunResult> {
    const parent = await this.mustSession(p.sessionKey);
    const agent = this.d.orchestrator.agentForKey(parent.key);
    return (await this.d.delegates.delegate({ sessionKey: parent.key, agent }, { conversation_id: p.conversation_id, prompt: p.prompt, mode: p.mode })) as DelegateRunResult;
  }

  delegatesStats() {
    return this.d.delegates.stats();
  }

  async status(): Promise<StatusSummary> {
    const m = this.d.metrics;
    const count = async (metric: { get(): Promise<{ values: Array<{ value: number; labels: Partial<Record<string, string | number>> }> }> }, label?: [string, string]) =>
      (await metric.get()).values.filter((v) => !label || v.labels[label[0]] === label[1]).reduce((a, v) => a + v.value, 0);
    const [pending, delegates, dead] = await Promise.all([
      // A count, not a list: the list read stops at 500 rows.
      this.d.store.db.selectFrom('approvals').select((eb) => eb.fn.countAll<string | number>().as('n')).where('status', '=', 'pending').executeTakeFirst(),
      this.d.delegates.stats(),
      // A count, not a list either: reading up to 1,000 dead rows to count them held PostgreSQL's event loop 38 ms at
      // 100,000 sessions (bench:scale), and said 1,000 for any number above.
      this.d.store.countWebhooks('dead'),
    ]);
    const base = {
      activeRuns: this.d.orchestrator.activeRunCount(),
      pendingApprovals: Number(pending?.n ?? 0),
      delegates,
      runs: { ok: await count(m.runs, ['outcome', 'ok']), error: await count(m.runs, ['outcome', 'error']), interrupted: await count(m.runs, ['outcome', 'interrupted']) },
      silence: await count(m.silence),
      rateLimited: await count(m.rateLimited),
      webhooksDead: dead,
      node: process.version,
      ...(this.d.mcpStatus ? { mcp: this.d.mcpStatus() } : {}),
      ...(this.d.usage ? { usage: await this.d.usage.total() } : {}),
    };
    if (!this.d.cluster) return base;
    // Several processes: run figures are the whole cluster's, read from the store.
    // Ended runs from the trigger-kept counts (0019_scale), running ones from the status index: no GROUP BY over every run.
    const [byStatus, running] = await Promise.all([
      this.d.store.db.selectFrom('run_counts').select(['status', (eb) => eb.fn.sum<number>('n').as('n')]).groupBy('status').execute(),
      // Active as on SQLite (a session's run in flight): running, or paused on a person's decision.
      this.d.store.db.selectFrom('runs').select((eb) => eb.fn.countAll<number>().as('n')).where('status', 'in', ['running', 'waiting_approval']).executeTakeFirst(),
    ]);
    const n = (st: string) => Number(st === 'running' ? (running?.n ?? 0) : (byStatus.find((r) => r.status === st)?.n ?? 0));
    return {
      ...base,
      activeRuns: n('running'),
      runs: { ok: n('ok'), error: n('error'), interrupted: n('interrupted') },
      processes: (await this.d.cluster.processes()).map((p) => ({ id: p.id, host: p.host, pid: p.pid, ...(p.url ? { url: p.url } : {}), startedAt: p.started_at })),
    };
  }

  async webhooksList(p: WebhooksListParams) {
    const rows = await this.d.store.listWebhooks({ status: p.status, limit: p.limit ?? 50 });
    return {
      webhooks: rows.map(
        (r): WebhookInfo => ({
          id: r.id,
          runId: r.run_id,
          url: r.url,
          status: r.status as WebhookInfo['status'],
          attempts: r.attempts,
          ...(r.last_error ? { lastError: r.last_error } : {}),
          nextAttemptAt: r.next_attempt_at,
          createdAt: r.created_at,
          ...(r.delivered_at ? { deliveredAt: r.delivered_at } : {}),
        }),
      ),
    };
  }

  pairingsList() {
    return this.d.channels.pairingsList();
  }

  pairingsResolve(p: PairingsResolveParams) {
    return this.d.channels.pairingsResolve(p);
  }

  /** Where a reader opening the session mid-run replays from (`Store.activeRunStart`). */
  activeRunStart(sessionKey: string) {
    return this.d.store.activeRunStart(sessionKey);
  }

  events(o: EventSubscribeOptions) {
    const sub = this.d.bus.subscribe({ sessionKey: o.sessionKey, runId: o.runId }, o.after);
    o.signal?.addEventListener('abort', () => sub.close(), { once: true });
    return sub;
  }
}
