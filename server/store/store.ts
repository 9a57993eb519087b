// Repositories over the Kysely database: every query the gateway runs, keyset-paged and bounded.
import { type ExpressionBuilder, type Kysely, sql, type UpdateObject } from 'kysely';
import { type EventCursor, START } from '../events/cursor';
import type { Author, MessageKind, MessageRole, PendingEvent, TranscriptMessage } from '../events/types';
import type { DbHandle } from './db';
import { appendPg, type FinishPg, finishPg, messageValues, rowBytes, type UsageValues } from './run-writes';
import type { ApprovalRow, CallbackRow, Database, EventRow, MessageRow, RunRow, SessionRow, WebhookRow } from './schema';

export interface NewMessage {
  sessionKey: string;
  role: MessageRole;
  kind: MessageKind;
  content: string;
  runId?: string | null;
  author: Author;
  tool?: { name: string; callId: string; args?: unknown; result?: unknown };
  meta?: Record<string, unknown>;
}

export interface NewSession {
  key: string;
  agentId: string;
  kind: string;
  parentKey?: string | null;
  spawnDepth?: number;
  meta?: Record<string, unknown> | null;
  label?: string | null;
}

export const nowIso = () => new Date().toISOString();

/** A write of a session this process no longer owns (its lease was taken over): the run must stop. */
export class FencedError extends Error {
  constructor(readonly sessionKey: string) {
    super(`session ${sessionKey} was taken over by another process`);
    this.name = 'FencedError';
  }
}

const parseJson = (s: string | null): unknown => (s == null ? undefined : JSON.parse(s));

export function toTranscriptMessage(r: MessageRow): TranscriptMessage {
  const m: TranscriptMessage = {
    id: r.id,
    sessionKey: r.session_key,
    role: r.role as MessageRole,
    kind: r.kind as MessageKind,
    content: r.content,
    createdAt: r.created_at,
    author: { type: r.author_type as Author['type'], id: r.author_id, ...(r.author_name ? { name: r.author_name } : {}) },
  };
  if (r.run_id) m.runId = r.run_id;
  if (r.tool_name) {
    m.tool = {
      name: r.tool_name,
      callId: r.tool_call_id ?? '',
      args: parseJson(r.tool_args) ?? null,
      result: parseJson(r.tool_result) ?? null,
    };
  }
  if (r.meta) m.meta = JSON.parse(r.meta) as Record<string, unknown>;
  return m;
}

export class Store {
  readonly db: Kysely<Database>;
  readonly dialect: DbHandle['dialect'];

  /** In-memory recent rows are only safe while this process is the store's only writer (the embedded SQLite). */
  private readonly cacheRecent: boolean;

  constructor(private readonly handle: DbHandle) {
    this.db = handle.db;
    this.dialect = handle.dialect;
    this.cacheRecent = handle.dialect === 'sqlite';
  }

  close() {
    return this.handle.close();
  }

  // ── fencing ─────────────────────────────────────────────────────────────
  // The epochs of the sessions this process holds leases on (PostgreSQL). Every write that touches such a
  // session's row checks the epoch in the same statement, so a process that lost its lease writes nothing.

  private readonly fences = new Map<string, number>();

  setFence(key: string, epoch: number) {
    this.fences.set(key, epoch);
  }

  /** Forgets a fence; with `epoch`, only when it is still that one (a newer claim's fence stays). */
  clearFence(key: string, epoch?: number) {
    if (epoch === undefined || this.fences.get(key) === epoch) this.fences.delete(key);
  }

  /** Told how many events were refused because their session was taken over (a zombie's writes). */
  onFencedWrite?: (count: number) => void;

  fenceOf(key: string): number | undefined {
    return this.fences.get(key);
  }

  private async touchSession(
    tx: Kysely<Database>,
    key: string,
    set: UpdateObject<Database, 'sessions'> | ((eb: ExpressionBuilder<Database, 'sessions'>) => UpdateObject<Database, 'sessions'>),
    o: { allowMissing?: boolean } = {},
  ) {
    const fence = this.fences.get(key);
    let q = tx.updateTable('sessions').set(set).where('key', '=', key);
    if (fence !== undefined) q = q.where('epoch', '=', fence);
    const r = await q.executeTakeFirst();
    if (fence !== undefined && Number(r.numUpdatedRows) !== 1) {
      // Gone rather than taken over: the session was deleted under the run (the run ends with an error).
      if (!(await tx.selectFrom('sessions').select('key').where('key', '=', key).executeTakeFirst())) {
        if (o.allowMissing) return;
        throw new Error(`session ${key} was deleted`);
      }
      throw new FencedError(key);
    }
  }

  // ── sessions ────────────────────────────────────────────────────────────

  getSession(key: string): Promise<SessionRow | undefined> {
    return this.db.selectFrom('sessions').selectAll().where('key', '=', key).executeTakeFirst();
  }

  /** Creates the session when missing; returns the stored row either way. */
  async ensureSession(s: NewSession): Promise<SessionRow> {
    const existing = await this.getSession(s.key);
    if (existing) return existing;
    const ts = nowIso();
    await this.db
      .insertInto('sessions')
      .values({
        key: s.key,
        agent_id: s.agentId,
        kind: s.kind,
        label: s.label ?? null,
        model: null,
        thinking_level: null,
        spawn_depth: s.spawnDepth ?? 0,
        queue_mode: null,
        parent_key: s.parentKey ?? null,
        meta: s.meta ? JSON.stringify(s.meta) : null,
        created_at: ts,
        last_activity_at: ts,
        message_count: 0,
        bytes: 0,
        status: 'idle',
        last_interacted_at: s.kind === 'subagent' ? ts : null,
        turns: 0,
        dismissed_at: null,
      })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    return (await this.getSession(s.key))!;
  }

  /** Newest activity first, keyset on (last_activity_at, key). */
  listSessions(o: { limit: number; after?: [string, string]; agentId?: string; kind?: string }) {
    let q = this.db.selectFrom('sessions').selectAll();
    if (o.agentId) q = q.where('agent_id', '=', o.agentId);
    if (o.kind) q = q.where('kind', '=', o.kind);
    if (o.after) {
      const [ts, key] = o.after;
      q = q.where((eb) => eb.or([eb('last_activity_at', '<', ts), eb.and([eb('last_activity_at', '=', ts), eb('key', '<', key)])]));
    }
    return q.orderBy('last_activity_at', 'desc').orderBy('key', 'desc').limit(o.limit).execute();
  }

  /** A parent's delegate sessions, newest interaction first, keyset on (last_interacted_at, key). */
  listDelegates(o: { parentKey: string; limit: number; after?: [string, string] }): Promise<SessionRow[]> {
    let q = this.db.selectFrom('sessions').selectAll().where('parent_key', '=', o.parentKey).where('kind', '=', 'subagent').where('dismissed_at', 'is', null);
    if (o.after) {
      const [ts, key] = o.after;
      q = q.where((eb) => eb.or([eb('last_interacted_at', '<', ts), eb.and([eb('last_interacted_at', '=', ts), eb('key', '<', key)])]));
    }
    return q.orderBy('last_interacted_at', 'desc').orderBy('key', 'desc').limit(o.limit).execute();
  }

  async delegateStats(): Promise<{ reusable: number; bytes: number }> {
    const r = await this.db
      .selectFrom('sessions')
      .select((eb) => [eb.fn.countAll().as('n'), eb.fn.sum<number>('bytes').as('b')])
      .where('kind', '=', 'subagent')
      .where('dismissed_at', 'is', null)
      .executeTakeFirst();
    return { reusable: Number(r?.n ?? 0), bytes: Number(r?.b ?? 0) };
  }

  /** Marks a delegate engaged by its parent now (a new prompt): it moves to the front of the list. */
  async touchDelegate(key: string): Promise<void> {
    await this.db
      .updateTable('sessions')
      .set((eb) => ({ last_interacted_at: nowIso(), turns: eb('turns', '+', 1) }))
      .where('key', '=', key)
      .execute();
  }

  async patchSession(key: string, fields: Partial<Pick<SessionRow, 'model' | 'thinking_level' | 'label' | 'spawn_depth' | 'queue_mode' | 'status' | 'meta' | 'dismissed_at'>>) {
    if (Object.keys(fields).length) await this.db.updateTable('sessions').set(fields).where('key', '=', key).execute();
    return this.getSession(key);
  }

  async deleteSession(key: string, deleteTranscript: boolean): Promise<void> {
    this.recent.delete(key);
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('sessions').where('key', '=', key).execute();
      await tx.deleteFrom('session_tool_rules').where('session_key', '=', key).execute();
      if (deleteTranscript) {
        await tx.deleteFrom('messages').where('session_key', '=', key).execute();
        await tx.deleteFrom('events').where('session_key', '=', key).execute();
      }
    });
  }

  // ── transcript ─────────────────────────────────────────────────────────

  /** Appends rows in one transaction and bumps the session's counters. */
  async appendMessages(msgs: NewMessage[]): Promise<TranscriptMessage[]> {
    if (!msgs.length) return [];
    const key = msgs[0]!.sessionKey;
    if (this.dialect === 'postgres' && msgs.every((m) => m.sessionKey === key)) {
      const rows = msgs.map((m) => messageValues(m, nowIso()));
      const r = await appendPg(this.db, { key, epoch: this.fences.get(key), rows, usage: this.takeUsage(msgs) });
      if (!r.held) await this.lostSession(key);
      const out = rows.map((row, i) => toTranscriptMessage({ ...row, id: r.ids[i]! }));
      this.remember(out);
      return out;
    }
    const usage = this.takeUsage(msgs);
    const out = await this.db.transaction().execute(async (tx) => {
      if (usage.length) await tx.insertInto('model_usage').values(usage).execute();
      return this.appendIn(tx, msgs);
    });
    this.remember(out);
    return out;
  }

  /** A fenced write found the session row missing or held by a newer lease. */
  private async lostSession(key: string, allowMissing = false): Promise<void> {
    if (!(await this.getSession(key))) {
      if (allowMissing) return;
      throw new Error(`session ${key} was deleted`);
    }
    throw new FencedError(key);
  }

  private async appendIn(tx: Kysely<Database>, msgs: NewMessage[]): Promise<TranscriptMessage[]> {
    const ts = nowIso();
    const out: TranscriptMessage[] = [];
    const perSession = new Map<string, { count: number; bytes: number }>();
    for (const m of msgs) {
      const row = messageValues(m, ts);
      const { id } = await tx.insertInto('messages').values(row).returning('id').executeTakeFirstOrThrow();
      out.push(toTranscriptMessage({ ...row, id: Number(id) }));
      const agg = perSession.get(m.sessionKey) ?? { count: 0, bytes: 0 };
      agg.count += 1;
      agg.bytes += rowBytes(row);
      perSession.set(m.sessionKey, agg);
    }
    for (const [key, agg] of perSession) {
      await this.touchSession(tx, key, (eb) => ({ message_count: eb('message_count', '+', agg.count), bytes: eb('bytes', '+', agg.bytes), last_activity_at: ts }));
    }
    return out;
  }

  /**
   * A run starts: its status, the session's, and its input rows in one transaction (on PostgreSQL one
   * statement). Null when the run is no longer queued (cancelled meanwhile, from any process): it must not run.
   * `session` (PostgreSQL): the session row after the write, so the run need not read it again.
   */
  async startRun(runId: string, sessionKey: string, msgs: NewMessage[]): Promise<{ rows: TranscriptMessage[]; session?: SessionRow } | null> {
    if (this.dialect === 'postgres' && msgs.every((m) => m.sessionKey === sessionKey)) {
      const rows = msgs.map((m) => messageValues(m, nowIso()));
      const r = await appendPg(this.db, { key: sessionKey, epoch: this.fences.get(sessionKey), rows, startRun: runId });
      if (!r.held) await this.lostSession(sessionKey);
      if (!r.started) return null;
      const out = rows.map((row, i) => toTranscriptMessage({ ...row, id: r.ids[i]! }));
      this.remember(out);
      return { rows: out, ...(r.session ? { session: r.session } : {}) };
    }
    const out = await this.db.transaction().execute(async (tx) => {
      const r = await tx.updateTable('runs').set({ status: 'running', started_at: nowIso() }).where('id', '=', runId).where('status', '=', 'queued').executeTakeFirst();
      if (Number(r.numUpdatedRows) !== 1) return null;
      await this.touchSession(tx, sessionKey, { status: 'running' });
      return this.appendIn(tx, msgs);
    });
    if (out) this.remember(out);
    return out && { rows: out };
  }

  // ── model usage, written with the run's next rows ─────────────────────────
  // A model step's usage row goes into the same write as the step's transcript rows (or the run's end), so a
  // turn costs no extra round trip for it; a step whose rows were never written has no usage row either.

  private readonly usageByRun = new Map<string, UsageValues[]>();

  deferUsage(row: UsageValues): void {
    const list = this.usageByRun.get(row.run_id);
    if (list) list.push(row);
    else this.usageByRun.set(row.run_id, [row]);
  }

  /** The deferred usage rows of these rows' runs (or of `runIds`), taken out of the buffer. */
  takeUsage(from: Array<{ runId?: string | null }> | string[]): UsageValues[] {
    if (!this.usageByRun.size) return [];
    const out: UsageValues[] = [];
    for (const x of from) {
      const id = typeof x === 'string' ? x : x.runId;
      const list = id ? this.usageByRun.get(id) : undefined;
      if (!list) continue;
      out.push(...list);
      this.usageByRun.delete(id!);
    }
    return out;
  }

  /** A page of the transcript, newest first, strictly before `beforeId`. */
  async history(o: { sessionKey: string; limit: number; beforeId?: number; includeTools: boolean }): Promise<MessageRow[]> {
    let q = this.db.selectFrom('messages').selectAll().where('session_key', '=', o.sessionKey);
    if (o.beforeId !== undefined) q = q.where('id', '<', o.beforeId);
    if (!o.includeTools) q = q.where('kind', 'not in', ['tool_call', 'tool_result']);
    return q.orderBy('id', 'desc').limit(o.limit).execute();
  }

  // ── recent rows for model context ─────────────────────────────────────
  // Every run reads its session's newest rows; they are kept in memory, fed by appendMessages itself, so a turn
  // does not re-read and re-parse them. SQLite: this process is the only writer. PostgreSQL: other processes may
  // write into a session too, so an entry counts the rows it has seen and is used only while the session's
  // `message_count` (read by the caller) still matches.

  private recent = new Map<string, { rows: TranscriptMessage[]; whole: boolean; count?: number }>();
  private static readonly RECENT_SESSIONS = 256;
  private static readonly RECENT_ROWS = 256;

  /** The newest `n` rows of a session, oldest first (tool rows included). */
  async contextRows(sessionKey: string, n: number, messageCount?: number): Promise<TranscriptMessage[]> {
    const usable = this.cacheRecent || messageCount !== undefined;
    const hit = usable ? this.recent.get(sessionKey) : undefined;
    if (hit && (this.cacheRecent || hit.count === messageCount) && (hit.rows.length >= n || hit.whole)) {
      this.recent.delete(sessionKey); // LRU: most recently used last
      this.recent.set(sessionKey, hit);
      return hit.rows.slice(-n);
    }
    const rows = (await this.history({ sessionKey, limit: n, includeTools: true })).reverse().map(toTranscriptMessage);
    if (usable && n <= Store.RECENT_ROWS) {
      this.recent.set(sessionKey, { rows, whole: rows.length < n, ...(this.cacheRecent ? {} : { count: messageCount }) });
      if (this.recent.size > Store.RECENT_SESSIONS) this.recent.delete(this.recent.keys().next().value!);
    }
    return rows;
  }

  private remember(rows: TranscriptMessage[]) {
    for (const m of rows) {
      const e = this.recent.get(m.sessionKey);
      if (!e) continue;
      e.rows.push(m);
      if (e.count !== undefined) e.count += 1;
      if (e.rows.length > Store.RECENT_ROWS) {
        e.rows.splice(0, e.rows.length - Store.RECENT_ROWS);
        e.whole = false;
      }
    }
  }

  // ── runs ────────────────────────────────────────────────────────────────

  async insertRun(r: RunRow): Promise<void> {
    await this.db.insertInto('runs').values(r).execute();
  }

  getRun(id: string): Promise<RunRow | undefined> {
    return this.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async updateRun(id: string, fields: Partial<Omit<RunRow, 'id'>>): Promise<void> {
    await this.db.updateTable('runs').set(fields).where('id', '=', id).execute();
  }

  /**
   * Records a run's end together with its last rows, the callbacks and webhooks it owes, in one transaction
   * (fenced: a process that lost the session's lease records nothing, FencedError). With `idle` the session goes
   * idle and, with `release`, its lease is released unless queued work arrived meanwhile: then the answer is
   * `false` and this process keeps the lease and must run that work. `inTx` gets the rows written, to write
   * their events in the same transaction.
   */
  async finishRun(
    id: string,
    fields: Partial<Omit<RunRow, 'id'>>,
    callbacks: CallbackRow[],
    webhooks: WebhookRow[],
    session: { key: string; idle: boolean; release?: boolean },
    o: { messages?: NewMessage[]; events?: (rows: TranscriptMessage[]) => PendingEvent[] } = {},
  ): Promise<{ released: boolean; events: PendingEvent[]; ids: Array<{ id: number; tx?: string }> }> {
    const usage = this.takeUsage([id]);
    const msgs = o.messages ?? [];
    const pg = this.dialect === 'postgres' && msgs.every((m) => m.sessionKey === session.key);
    const out = await this.db.transaction().execute(async (tx) => {
      let released = false;
      let rows: TranscriptMessage[] = [];
      let events: PendingEvent[] = [];
      let ids: Array<{ id: number; tx?: string }> = [];
      if (pg) {
        const values = msgs.map((m) => messageValues(m, nowIso()));
        const r = await finishPg(tx, {
          key: session.key,
          epoch: this.fences.get(session.key),
          runId: id,
          set: fields as FinishPg['set'],
          rows: values,
          usage,
          idle: session.idle,
          release: !!session.release,
          events: (msgIds) => {
            rows = values.map((v, i) => toTranscriptMessage({ ...v, id: msgIds[i]! }));
            return (events = o.events?.(rows) ?? []);
          },
          notify: this.eventsChannel,
        });
        if (r.held) {
          released = r.released;
          ids = r.events;
        } else {
          await this.lostSession(session.key, true); // FencedError unless the session was deleted under the run
          await tx.updateTable('runs').set(fields).where('id', '=', id).execute();
          events = o.events?.([]) ?? [];
          ids = await this.insertEventsIn(tx, events, { notify: true });
        }
      } else {
        await tx.updateTable('runs').set(fields).where('id', '=', id).execute();
        if (session.idle && session.release) {
          // Lock the row first: an enqueue from another process either committed before (its queued run is seen
          // by the next statement, which reads a fresh snapshot) or waits for this release and then claims.
          await tx.selectFrom('sessions').select('key').where('key', '=', session.key).forUpdate().execute();
          const queued = await tx.selectFrom('runs').select('id').where('session_key', '=', session.key).where('status', '=', 'queued').limit(1).executeTakeFirst();
          released = !queued;
        }
        if (usage.length) await tx.insertInto('model_usage').values(usage).execute();
        if (msgs.length) rows = await this.appendIn(tx, msgs);
        await this.touchSession(tx, session.key, session.idle ? (released ? { status: 'idle', owner: null } : { status: 'idle' }) : { status: 'running' }, { allowMissing: true });
        events = o.events?.(rows) ?? [];
        ids = await this.insertEventsIn(tx, events, { notify: true });
      }
      if (callbacks.length) await tx.insertInto('callbacks').values(callbacks).onConflict((oc) => oc.column('id').doNothing()).execute();
      if (webhooks.length) await this.insertWebhooks(tx, webhooks);
      return { released, rows, events, ids };
    });
    this.remember(out.rows);
    return out;
  }

  /** A session's unfinished runs, oldest first: the one in flight (running or paused) and the queue. */
  unfinishedRuns(sessionKey: string): Promise<RunRow[]> {
    return this.db
      .selectFrom('runs')
      .selectAll()
      .where('session_key', '=', sessionKey)
      .where('status', 'in', ['running', 'waiting_approval', 'queued'])
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  queuedRuns(sessionKey: string): Promise<RunRow[]> {
    return this.db.selectFrom('runs').selectAll().where('session_key', '=', sessionKey).where('status', '=', 'queued').orderBy('created_at').orderBy('id').execute();
  }

  /** Ends a run that has not started (from any process); false when it had started or ended meanwhile. */
  async endQueued(runId: string, error: string): Promise<boolean> {
    const r = await this.db.updateTable('runs').set({ status: 'error', error, ended_at: nowIso() }).where('id', '=', runId).where('status', '=', 'queued').executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** Releases an idle session's lease unless queued work arrived (then false: the holder keeps it and runs that). */
  async releaseIfIdle(sessionKey: string, owner: string): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      await tx.selectFrom('sessions').select('key').where('key', '=', sessionKey).forUpdate().execute();
      const queued = await tx.selectFrom('runs').select('id').where('session_key', '=', sessionKey).where('status', '=', 'queued').limit(1).executeTakeFirst();
      if (queued) return false;
      await tx.updateTable('sessions').set({ owner: null, status: 'idle' }).where('key', '=', sessionKey).where('owner', '=', owner).execute();
      return true;
    });
  }

  async markToolStarted(runId: string, callId: string): Promise<void> {
    await this.db.insertInto('tool_starts').values({ run_id: runId, call_id: callId, started_at: nowIso() }).onConflict((oc) => oc.columns(['run_id', 'call_id']).doNothing()).execute();
  }

  async toolStarted(runId: string, callId: string): Promise<boolean> {
    return !!(await this.db.selectFrom('tool_starts').select('call_id').where('run_id', '=', runId).where('call_id', '=', callId).executeTakeFirst());
  }

  /** Rows steered into a run (their callbacks and webhooks follow that run's end). */
  mergedInto(runId: string): Promise<RunRow[]> {
    return this.db.selectFrom('runs').selectAll().where('merged_into', '=', runId).execute();
  }

  /** Callbacks recorded but not yet turned into caller turns (`olderThanMs`: leave the fresh ones to their run's process). */
  pendingCallbacks(olderThanMs = 0): Promise<CallbackRow[]> {
    let q = this.db.selectFrom('callbacks').selectAll().where('status', '=', 'pending');
    if (olderThanMs) q = q.where('created_at', '<', new Date(Date.now() - olderThanMs).toISOString());
    return q.orderBy('created_at').orderBy('id').limit(1000).execute();
  }

  async settleCallback(id: string, status: 'delivered' | 'dropped', error?: string): Promise<void> {
    await this.db.updateTable('callbacks').set({ status, error: error ?? null, delivered_at: nowIso() }).where('id', '=', id).execute();
  }

  /** Set by boot: what makes webhook rows run once their transaction commits (PostgreSQL: the job engine's jobs). */
  webhookJobs?: (tx: Kysely<Database>, rows: WebhookRow[]) => Promise<void>;

  /** Webhook rows (ids derive from what they report: an id written before is skipped), with their jobs, in `tx`. */
  async insertWebhooks(tx: Kysely<Database>, rows: WebhookRow[]): Promise<void> {
    const fresh = await tx.insertInto('webhook_outbox').values(rows).onConflict((oc) => oc.column('id').doNothing()).returning('id').execute();
    const ids = new Set(fresh.map((r) => r.id));
    if (ids.size) await this.webhookJobs?.(tx, rows.filter((r) => ids.has(r.id)));
  }

  /** SQLite's dispatcher (PostgreSQL's webhooks are the job engine's). */
  dueWebhooks(now: string, limit: number): Promise<WebhookRow[]> {
    return this.db.selectFrom('webhook_outbox').selectAll().where('status', '=', 'pending').where('next_attempt_at', '<=', now).orderBy('next_attempt_at').limit(limit).execute();
  }

  async nextWebhookDue(): Promise<string | undefined> {
    const r = await this.db.selectFrom('webhook_outbox').select((eb) => eb.fn.min('next_attempt_at').as('m')).where('status', '=', 'pending').executeTakeFirst();
    return (r?.m as string | null) ?? undefined;
  }

  async updateWebhook(id: string, fields: Partial<Omit<WebhookRow, 'id'>>): Promise<void> {
    await this.db.updateTable('webhook_outbox').set(fields).where('id', '=', id).execute();
  }

  listWebhooks(o: { status?: string; limit: number }): Promise<WebhookRow[]> {
    let q = this.db.selectFrom('webhook_outbox').selectAll();
    if (o.status) q = q.where('status', '=', o.status);
    return q.orderBy('created_at', 'desc').limit(o.limit).execute();
  }

  runsWithStatus(statuses: string[]): Promise<RunRow[]> {
    return this.db.selectFrom('runs').selectAll().where('status', 'in', statuses).orderBy('created_at').orderBy('id').execute();
  }

  // ── events ──────────────────────────────────────────────────────────────

  /**
   * Writes a batch of events in one transaction; their ids (and on PostgreSQL their transaction id) come back in
   * emit order. Events of sessions this process holds a lease on are fenced: when the lease was taken over,
   * they are dropped (null) instead of landing beside the new owner's. `notify` (PostgreSQL) wakes the other
   * processes' readers once, at commit.
   */
  async insertEvents(events: PendingEvent[], o: { notify?: (tx: Kysely<Database>) => Promise<void> } = {}): Promise<Array<{ id: number; tx?: string } | null>> {
    if (!events.length) return [];
    if (this.dialect === 'postgres' && events.length <= 500) return this.insertEventsPg(events, !!o.notify);
    return this.db.transaction().execute(async (tx) => {
      let keep = events;
      const out: Array<{ id: number; tx?: string } | null> = new Array(events.length).fill(null);
      const fenced = [...new Set(events.filter((e) => e.epoch !== undefined).map((e) => e.sessionKey))];
      let isLost: ((e: PendingEvent) => boolean) | null = null;
      if (fenced.length) {
        // FOR SHARE: a takeover (which bumps the epoch) waits for this commit, or this sees the new epoch.
        const rows = await tx.selectFrom('sessions').select(['key', 'epoch']).where('key', 'in', fenced).forShare().execute();
        const epochs = new Map(rows.map((r) => [r.key, Number(r.epoch)]));
        const lost = (e: PendingEvent) => e.epoch !== undefined && epochs.get(e.sessionKey) !== e.epoch;
        if (events.some(lost)) {
          isLost = lost;
          keep = events.filter((e) => !lost(e));
          this.onFencedWrite?.(events.length - keep.length);
        }
      }
      const written = await this.insertEventsIn(tx, keep);
      let w = 0;
      for (let i = 0; i < events.length; i++) if (!isLost?.(events[i]!)) out[i] = written[w++]!;
      if (o.notify && written.length) await o.notify(tx);
      return out;
    });
  }

  /** NOTIFY channel of the cluster's event wake-ups (PostgreSQL; set by boot). */
  eventsChannel?: string;

  /**
   * PostgreSQL, one statement (one round trip, no BEGIN/COMMIT): the fence check (FOR SHARE on the sessions held
   * under a lease), the insert of the rows that pass it, in order, and one NOTIFY (identical notifications of a
   * transaction are delivered once).
   */
  private async insertEventsPg(events: PendingEvent[], notify: boolean): Promise<Array<{ id: number; tx?: string } | null>> {
    const rows = events.map((e, i) => ({ o: i, r: e.runId, s: e.seq, st: e.stream, ts: e.ts, k: e.sessionKey, d: JSON.stringify(e.data), e: e.epoch ?? null }));
    const fenced = [...new Set(events.filter((e) => e.epoch !== undefined).map((e) => e.sessionKey))];
    const res = await sql<{ id: number; tx: string; o: number }>`
      with f as (select key, epoch from sessions where key = any(${fenced}::text[]) for share),
      v as (select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as x(o int, r text, s int, st text, ts text, k text, d text, e int)),
      ins as (
        insert into events (run_id, seq, stream, ts, session_key, data)
        select r, s, st, ts, k, d from v
        where v.e is null or exists (select 1 from f where f.key = v.k and f.epoch = v.e)
        order by o
        returning id, tx::text as tx, run_id, seq)
      select ins.id, ins.tx, v.o${notify && this.eventsChannel ? sql`, pg_notify(${this.eventsChannel}, '{"kind":"events"}')` : sql``}
      from ins join v on v.r = ins.run_id and v.s = ins.seq`.execute(this.db);
    const out: Array<{ id: number; tx?: string } | null> = new Array(events.length).fill(null);
    for (const r of res.rows) out[r.o] = { id: Number(r.id), tx: r.tx };
    const lost = out.filter((x) => x === null).length;
    if (lost) this.onFencedWrite?.(lost);
    return out;
  }

  /** Inserts events in the caller's transaction (no fencing: the caller's transaction is fenced itself). */
  async insertEventsIn(tx: Kysely<Database>, events: PendingEvent[], o: { notify?: boolean } = {}): Promise<Array<{ id: number; tx?: string }>> {
    const written: Array<{ id: number; tx?: string }> = [];
    if (this.dialect === 'postgres' && o.notify && this.eventsChannel && events.length <= 200) {
      // One statement: the rows and the cluster's wake-up (delivered at commit).
      const values = events.map((e, i) => ({ o: i, r: e.runId, s: e.seq, st: e.stream, ts: e.ts, k: e.sessionKey, d: JSON.stringify(e.data) }));
      const res = await sql<{ id: number; tx: string }>`
        with ins as (
          insert into events (run_id, seq, stream, ts, session_key, data)
          select r, s, st, ts, k, d from jsonb_to_recordset(${JSON.stringify(values)}::jsonb) as x(o int, r text, s int, st text, ts text, k text, d text)
          order by o
          returning id, tx::text as tx),
        wake as (select pg_notify(${this.eventsChannel}, '{"kind":"events"}'))
        select ins.id, ins.tx from ins, wake order by ins.id`.execute(tx);
      return res.rows.map((r) => ({ id: Number(r.id), tx: r.tx }));
    }
    // Chunked multi-row inserts; ids of one statement rise in insertion order.
    for (let i = 0; i < events.length; i += 200) {
      const chunk = events.slice(i, i + 200);
      const values = chunk.map((e) => ({ run_id: e.runId, seq: e.seq, stream: e.stream, ts: e.ts, session_key: e.sessionKey, data: JSON.stringify(e.data) }));
      if (this.dialect === 'postgres') {
        const rows = await tx.insertInto('events').values(values).returning(['id', sql<string>`tx::text`.as('tx')]).execute();
        written.push(...rows.map((r) => ({ id: Number(r.id), tx: r.tx })).sort((a, b) => a.id - b.id));
      } else {
        const rows = await tx.insertInto('events').values(values).returning('id').execute();
        written.push(...rows.map((r) => ({ id: Number(r.id) })).sort((a, b) => a.id - b.id));
      }
    }
    return written;
  }

  async maxSeq(runId: string): Promise<number> {
    const r = await this.db.selectFrom('events').select((eb) => eb.fn.max('seq').as('m')).where('run_id', '=', runId).executeTakeFirst();
    return Number(r?.m ?? 0);
  }

  /**
   * Events after a cursor, in log order. On PostgreSQL only rows of settled transactions (below the snapshot's
   * xmin) are returned, so a row that commits late is never skipped; `pending` says more may come.
   */
  async eventsAfter(o: { after: EventCursor; sessionKey?: string; runId?: string; limit: number }): Promise<{ rows: Array<EventRow & { cursor: EventCursor }>; pending: boolean }> {
    if (this.dialect !== 'postgres') {
      let q = this.db.selectFrom('events').selectAll().where('id', '>', o.after.id);
      if (o.sessionKey) q = q.where('session_key', '=', o.sessionKey);
      if (o.runId) q = q.where('run_id', '=', o.runId);
      const rows = await q.orderBy('id').limit(o.limit).execute();
      return { rows: rows.map((r) => ({ ...r, cursor: { id: Number(r.id) } })), pending: false };
    }
    const after = o.after.tx === undefined ? await this.resolveCursor(o.after) : o.after;
    const rows = await sql<EventRow & { tx: string; xmin: string }>`
      select id, run_id, seq, stream, ts, session_key, data, tx::text as tx, pg_snapshot_xmin(pg_current_snapshot())::text as xmin
      from events
      where (tx, id) > (${String(after.tx)}::xid8, ${after.id})
        ${o.sessionKey ? sql`and session_key = ${o.sessionKey}` : sql``}
        ${o.runId ? sql`and run_id = ${o.runId}` : sql``}
      order by tx, id limit ${o.limit}`.execute(this.db);
    const out: Array<EventRow & { cursor: EventCursor }> = [];
    let pending = false;
    for (const r of rows.rows) {
      const tx = BigInt(r.tx);
      if (tx >= BigInt(r.xmin)) {
        pending = true; // an older transaction may still commit rows before this one: wait for the horizon
        break;
      }
      const { xmin: _x, ...row } = r;
      out.push({ ...row, id: Number(r.id), cursor: { id: Number(r.id), tx } });
    }
    return { rows: out, pending };
  }

  /** A plain event id (an older client's Last-Event-ID) as a full cursor: just before that event's place. */
  async resolveCursor(c: EventCursor): Promise<EventCursor> {
    if (c.tx !== undefined || this.dialect !== 'postgres') return c;
    if (c.id === 0) return START;
    const r = await sql<{ tx: string; id: number }>`select tx::text as tx, id from events where id <= ${c.id} order by id desc limit 1`.execute(this.db);
    const row = r.rows[0];
    return row ? { tx: BigInt(row.tx), id: Number(row.id) } : START;
  }

  /** A position every settled row is at or before (PostgreSQL): just below the snapshot's xmin. */
  async settledHorizon(): Promise<EventCursor> {
    const r = await sql<{ xmin: string }>`select pg_snapshot_xmin(pg_current_snapshot())::text as xmin`.execute(this.db);
    return { tx: BigInt(r.rows[0]!.xmin) - 1n, id: Number.MAX_SAFE_INTEGER };
  }

  /** The newest settled position of the log (PostgreSQL): a live reader starts after it. */
  async logHead(): Promise<EventCursor> {
    if (this.dialect !== 'postgres') {
      const r = await this.db.selectFrom('events').select((eb) => eb.fn.max('id').as('m')).executeTakeFirst();
      return { id: Number(r?.m ?? 0) };
    }
    const r = await sql<{ tx: string; id: number }>`
      select tx::text as tx, id from events where tx < pg_snapshot_xmin(pg_current_snapshot()) order by tx desc, id desc limit 1`.execute(this.db);
    const row = r.rows[0];
    return row ? { tx: BigInt(row.tx), id: Number(row.id) } : START;
  }

  // ── approvals ───────────────────────────────────────────────────────────

  async insertApproval(a: Omit<ApprovalRow, 'trust'> & { trust?: string | null }): Promise<void> {
    await this.db.insertInto('approvals').values(a).execute();
  }

  getApproval(id: string): Promise<ApprovalRow | undefined> {
    return this.db.selectFrom('approvals').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Settles a pending approval; false when it was not pending (already resolved or cancelled). */
  async settleApproval(id: string, status: string, decision: string | null, reason: string | null): Promise<boolean> {
    const res = await this.db
      .updateTable('approvals')
      .set({ status, decision, reason, resolved_at: nowIso() })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  approvalForCall(runId: string, callId: string): Promise<ApprovalRow | undefined> {
    return this.db.selectFrom('approvals').selectAll().where('run_id', '=', runId).where('call_id', '=', callId).executeTakeFirst();
  }

  pendingApprovals(o: { sessionKey?: string; runId?: string } = {}): Promise<ApprovalRow[]> {
    let q = this.db.selectFrom('approvals').selectAll().where('status', '=', 'pending');
    if (o.sessionKey) q = q.where('session_key', '=', o.sessionKey);
    if (o.runId) q = q.where('run_id', '=', o.runId);
    return q.orderBy('requested_at').orderBy('id').limit(500).execute();
  }

  async addToolRule(sessionKey: string, tool: string): Promise<void> {
    await this.db
      .insertInto('session_tool_rules')
      .values({ session_key: sessionKey, tool, created_at: nowIso() })
      .onConflict((oc) => oc.columns(['session_key', 'tool']).doNothing())
      .execute();
  }

  async hasToolRule(sessionKey: string, tool: string): Promise<boolean> {
    const r = await this.db
      .selectFrom('session_tool_rules')
      .select('tool')
      .where('session_key', '=', sessionKey)
      .where('tool', '=', tool)
      .executeTakeFirst();
    return !!r;
  }

  // ── idempotency ─────────────────────────────────────────────────────────

  async getIdempotent(key: string): Promise<unknown | undefined> {
    const r = await this.db.selectFrom('idempotency').select('result').where('key', '=', key).executeTakeFirst();
    return r ? JSON.parse(r.result) : undefined;
  }

  async putIdempotent(key: string, result: unknown): Promise<void> {
    await this.db
      .insertInto('idempotency')
      .values({ key, result: JSON.stringify(result), created_at: nowIso() })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
  }
}
