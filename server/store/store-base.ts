// The store's lower half: the event log, callbacks, deliveries, webhooks and idempotency keys, on one Kysely database
// (SQLite or PostgreSQL). ApprovalRecords (approval-records.ts) adds approvals and tool rules, Store (store.ts) sessions,
// transcripts and runs on top.
import { type Kysely, sql } from 'kysely';
import { type EventCursor, START } from '../events/cursor';
import type { Author, MessageKind, MessageRole, PendingEvent, TranscriptMessage } from '../events/types';
import type { DbHandle } from './db';
import type { CallbackRow, Database, DeliveryRow, MessageRow, RunRow, WebhookRow } from './schema';
import { insertEventsSql, wakeEventsSql, writeSkippingLogged } from './event-sql';
import { cursorBeyondLog, logHead, settledHorizon } from './log-positions';
import { type FoldStep, foldRun, foldWrittenPg, type LogPage, type LogRow, readEventsAfter, resolvePlainId, runStartCursor } from './event-fold';
import { advanceDeliveries, countAttempts, type DeliveryChange, insertDeliveries, type NewDelivery, newDeliveryId, queuedRunDeliveries, setDeliveryRun } from './deliveries';
import { claimWebhookAttempt, recordWebhookOutcome, webhookDead, webhookDeliveryId } from './webhook-outbox';

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

/** A run in flight: running, or paused on an approval. */
export const IN_FLIGHT = ['running', 'waiting_approval'];
/** The deepest delegate tree walked, up (parent chains) or down (a parent's delegates): delegate depth is far lower; a cycle in bad data stops here. */
export const MAX_TREE_DEPTH = 16;

export { webhookDeliveryId } from './webhook-outbox';

/** Events per insert statement (one jsonb parameter, or a multi-row insert on SQLite). */
const EVENT_CHUNK = 500;

/** The stored columns of a new session (idle, unowned). */
export function sessionValues(s: NewSession, ts: string) {
  return {
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
  };
}

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

export class StoreBase {
  readonly db: Kysely<Database>;
  readonly dialect: DbHandle['dialect'];
  /** SQLite: where sessions.search runs (a worker thread); undefined on PostgreSQL. */
  readonly sqliteSearch: DbHandle['sqliteSearch'];

  constructor(protected readonly handle: DbHandle) {
    this.db = handle.db;
    this.dialect = handle.dialect;
    this.sqliteSearch = handle.sqliteSearch;
  }

  close() {
    return this.handle.close();
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

  /**
   * A callback settled: `delivered` once its run is in the caller's session (its row, written when that run starts,
   * moves its own delivery and answers the hand-off it carries: `rowDeliveries`, CONTRACT §9); `dropped` when the
   * caller is gone, which fails both (`answers`).
   */
  async settleCallback(id: string, status: 'delivered' | 'dropped', o: { error?: string; answers?: string } = {}): Promise<void> {
    const changes = await this.db.transaction().execute(async (tx) => {
      await tx.updateTable('callbacks').set({ status, error: o.error ?? null, delivered_at: nowIso() }).where('id', '=', id).execute();
      if (status === 'delivered') return [];
      const gone = { code: o.error ?? 'unknown_session', message: 'the caller session is gone' };
      return advanceDeliveries(tx, [`dlv_${id}`, ...(o.answers ? [o.answers] : [])], 'failed', { error: gone });
    });
    this.announce(changes);
  }

  // ── deliveries (CONTRACT §9; the rows and their SQL in ./deliveries) ────

  /**
   * How a `dead` delivery is attempted again (deliveries.retry), by what it records (its `source` up to the first
   * colon: `webhook_outbox`, `channel`, …): each sender registers its own. Called once the record is `accepted` again.
   */
  readonly deliveryRetry = new Map<string, (row: DeliveryRow) => Promise<void>>();

  /** Set by boot: hands changed deliveries on as `delivery` events on both ends' streams, once their write committed. */
  onDeliveries?: (changes: DeliveryChange[]) => void;

  announce(changes: DeliveryChange[]): void {
    if (changes.length) this.onDeliveries?.(changes);
  }

  /** New deliveries (an id seen before is kept as it is: a re-driven call finds its own), announced. */
  async createDeliveries(list: NewDelivery[]): Promise<DeliveryChange[]> {
    const changes = await this.db.transaction().execute((tx) => insertDeliveries(tx, list));
    this.announce(changes);
    return changes;
  }

  /** Moves deliveries forward (never back; a late or repeated step changes nothing), announced. */
  /** The run a hand-off reached, when another than the planned one (`setDeliveryRun`). */
  setDeliveryRun(id: string, runId: string): Promise<void> {
    return setDeliveryRun(this.db, id, runId);
  }

  async advanceDeliveries(ids: string[], to: Parameters<typeof advanceDeliveries>[2], o: Parameters<typeof advanceDeliveries>[3] = {}): Promise<DeliveryChange[]> {
    const changes = await this.db.transaction().execute((tx) => advanceDeliveries(tx, ids, to, o));
    this.announce(changes);
    return changes;
  }

  /**
   * A push delivery (CONTRACT §9 `push`: §7 notifications, A2A pushes outside the outbox), `accepted`; its id is the
   * caller's when it derives from what it pushes (an approval and a subscription), so a repeat records nothing new.
   * Then one `markAttempt` per attempt. A retry of a dead one calls `deliveryRetry.get('push')` (register it).
   */
  async createPush(p: { id?: string; from?: { sessionKey?: string | null; runId?: string | null }; to: { url: string; sessionKey?: string | null }; source?: string }): Promise<string> {
    const id = p.id ?? newDeliveryId();
    await this.createDeliveries([{ id, kind: 'push', from: p.from ?? {}, to: { url: p.to.url, sessionKey: p.to.sessionKey ?? null }, source: p.source ?? `push:${id}` }]);
    return id;
  }

  /**
   * One attempt of a delivery to the outside (a channel send, a push), recorded: `ok` moves it to `delivered`,
   * else its attempts count up and with `final` it is `dead`.
   */
  async markAttempt(
    id: string,
    o: { ok: true } | { ok: false; error: { code: string; message: string }; final: boolean; end?: 'failed'; notBefore?: string; sent?: false },
  ): Promise<DeliveryChange[]> {
    const changes = await this.db.transaction().execute(async (tx) => {
      if (o.ok) return advanceDeliveries(tx, [id], 'delivered', { attempt: true, error: null });
      // `failed` for an end nothing could change (a retry would say the same), else `dead`: retries ran out. An end found
      // before anything was sent (`sent: false`: its item was decided meanwhile) counts no attempt.
      if (o.final) return advanceDeliveries(tx, [id], o.end ?? 'dead', { attempt: o.sent !== false, error: o.error });
      await countAttempts(tx, id, 1, o.error);
      if (o.notBefore) await tx.updateTable('deliveries').set({ not_before: o.notBefore }).where('id', '=', id).execute();
      return [];
    });
    this.announce(changes);
    return changes;
  }

  /** Set by boot: what makes webhook rows run once their transaction commits (PostgreSQL: the job engine's jobs). */
  webhookJobs?: (tx: Kysely<Database>, rows: WebhookRow[]) => Promise<void>;

  /** Webhook rows (ids derive from what they report: an id written before is skipped), with their jobs, in `tx`. */
  async insertWebhooks(tx: Kysely<Database>, rows: WebhookRow[]): Promise<DeliveryChange[]> {
    const fresh = await tx.insertInto('webhook_outbox').values(rows).onConflict((oc) => oc.column('id').doNothing()).returning('id').execute();
    const ids = new Set(fresh.map((r) => r.id));
    if (!ids.size) return [];
    const added = rows.filter((r) => ids.has(r.id));
    // Each row is a delivery of its own (`webhook`, or `push` for an A2A push notification), in the same transaction.
    const froms = await tx.selectFrom('runs').select(['id', 'session_key']).where('id', 'in', [...new Set(added.map((r) => r.run_id))]).execute();
    const sessionOf = new Map(froms.map((r) => [r.id, r.session_key]));
    const changes = await insertDeliveries(
      tx,
      added.map((r) => ({ id: webhookDeliveryId(r.id), kind: r.headers ? 'push' : 'webhook', from: { sessionKey: sessionOf.get(r.run_id) ?? null, runId: r.run_id }, to: { url: r.url }, runId: r.run_id, source: `webhook_outbox:${r.id}` })),
    );
    await this.webhookJobs?.(tx, added);
    return changes;
  }

  /** SQLite's dispatcher (PostgreSQL's webhooks are the job engine's). */
  dueWebhooks(now: string, limit: number): Promise<WebhookRow[]> {
    return this.db.selectFrom('webhook_outbox').selectAll().where('status', '=', 'pending').where('next_attempt_at', '<=', now).orderBy('next_attempt_at').limit(limit).execute();
  }

  /** When the next pending webhook is due, leaving out `except` (the ones being attempted now). */
  async nextWebhookDue(except: readonly string[] = []): Promise<string | undefined> {
    let q = this.db.selectFrom('webhook_outbox').select((eb) => eb.fn.min('next_attempt_at').as('m')).where('status', '=', 'pending');
    if (except.length) q = q.where('id', 'not in', except);
    const r = await q.executeTakeFirst();
    return (r?.m as string | null) ?? undefined;
  }

  /**
   * Counts one more attempt of a pending row before its POST, on the row and its delivery in one transaction, so an
   * attempt lost with its process counts in both (README "Webhooks"). `nextAt`: when the next attempt is due should
   * this one fail or be lost (the backoff); `final`: the round's last; `from`: only if the row still has this many
   * (SQLite: a row read before an attempt of it ended is not attempted again). Returns the row's attempts with this
   * one, null when not claimed (settled meanwhile, or `from` is stale).
   */
  claimWebhookAttempt(id: string, o: { nextAt?: string; final: boolean; from?: number }): Promise<number | null> {
    return claimWebhookAttempt(this.db, id, o);
  }

  /** A claimed attempt's outcome on the outbox row and its delivery, in one transaction (2xx: delivered; the last failure: dead). */
  async updateWebhook(id: string, fields: Partial<Omit<WebhookRow, 'id' | 'attempts'>>): Promise<void> {
    this.announce(await recordWebhookOutcome(this.db, id, fields));
  }

  /**
   * A row whose attempts ran out without one reporting: dead, if still pending (and its delivery with it); with
   * `notRetriedSince`, only when its round began by then (a row retried since is left to its new round).
   */
  async webhookDead(id: string, error: string, notRetriedSince?: string): Promise<boolean> {
    const r = await webhookDead(this.db, id, error, notRetriedSince);
    if (r) this.announce(r);
    return r !== null;
  }

  /** How many webhooks are in a state: a count over the (status, next_attempt_at) index, no rows read. */
  async countWebhooks(status: string): Promise<number> {
    const r = await this.db.selectFrom('webhook_outbox').select((eb) => eb.fn.countAll<string | number>().as('n')).where('status', '=', status).executeTakeFirst();
    return Number(r?.n ?? 0);
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
   * Writes a batch of events; their ids (and on PostgreSQL their transaction id) come back in emit order. On
   * PostgreSQL events of sessions this process holds a lease on are fenced: when the lease was taken over, they
   * are dropped (null) instead of landing beside the new owner's; `notify` wakes the other processes' readers.
   */
  async insertEvents(events: PendingEvent[], o: { notify?: boolean; again?: boolean; logged?: (ids: Array<{ id: number; tx?: string } | null>) => void } = {}): Promise<Array<{ id: number; tx?: string } | null>> {
    if (!events.length) return [];
    if (this.dialect === 'postgres') {
      const write = async (rest: PendingEvent[]) => {
        const out: Array<{ id: number; tx?: string } | null> = [];
        for (let i = 0; i < rest.length; i += EVENT_CHUNK) out.push(...(await this.insertEventsPg(rest.slice(i, i + EVENT_CHUNK), !!o.notify)));
        return out;
      };
      // `again`: a write retried after a lost connection skips the rows its first attempt did commit.
      const out = o.again ? await writeSkippingLogged(this.db, events, write) : await write(events);
      o.logged?.(out);
      return out;
    }
    return this.loggedTx((tx) => this.insertEventsIn(tx, events), o.logged);
  }

  /**
   * A transaction whose written events are handed on (`logged`) in log order. SQLite: right after the commit, before
   * the connection is let go, so no later write's events (a prepared write resolves in fewer steps than a Kysely
   * transaction) are fanned out first: a live subscriber drops an event older than one it has been handed.
   */
  protected async loggedTx<T>(body: (tx: Kysely<Database>) => Promise<T>, logged?: (r: T) => void): Promise<T> {
    if (this.dialect === 'postgres' || !logged) {
      const r = await this.db.transaction().execute(body);
      logged?.(r);
      return r;
    }
    return this.db.connection().execute(async (c) => {
      const r = await c.transaction().execute(body);
      logged(r);
      return r;
    });
  }

  /** NOTIFY channel of the cluster's event wake-ups (PostgreSQL; set by boot). */
  eventsChannel?: string;

  /**
   * PostgreSQL, one statement (one round trip, no BEGIN/COMMIT): the fence check (FOR SHARE on the sessions held
   * under a lease, locked in key order like every statement that locks several: server/cluster/lease-sql.ts), the
   * insert of the rows that pass it, in order, and one NOTIFY (identical notifications of a transaction are
   * delivered once).
   */
  private async insertEventsPg(events: PendingEvent[], notify: boolean): Promise<Array<{ id: number; tx?: string } | null>> {
    const fenced = [...new Set(events.filter((e) => e.epoch !== undefined).map((e) => e.sessionKey))];
    const res = await sql<{ id: number; tx: string; run_id: string; seq: number }>`
      with f as (select key, epoch from sessions where key = any(${fenced}::text[]) order by key for share),
      ins as (${insertEventsSql(events, { where: sql`x.e is null or exists (select 1 from f where f.key = x.k and f.epoch = x.e)`, returning: sql`id, tx::text as tx, run_id, seq` })})
      select ins.id, ins.tx, ins.run_id, ins.seq${notify && this.eventsChannel ? sql`, ${wakeEventsSql(this.eventsChannel)}` : sql``} from ins`.execute(this.db);
    const at = new Map(events.map((e, i) => [`${e.runId}\u0000${e.seq}`, i]));
    const out: Array<{ id: number; tx?: string } | null> = new Array(events.length).fill(null);
    for (const r of res.rows) out[at.get(`${r.run_id}\u0000${r.seq}`)!] = { id: Number(r.id), tx: r.tx };
    return out;
  }

  /** Inserts events in the caller's transaction (no fencing: the caller's transaction is fenced itself). */
  async insertEventsIn(tx: Kysely<Database>, events: PendingEvent[], o: { notify?: boolean } = {}): Promise<Array<{ id: number; tx?: string }>> {
    const written: Array<{ id: number; tx?: string }> = [];
    // Chunks of one statement each; ids of one statement rise in insertion order.
    for (let i = 0; i < events.length; i += EVENT_CHUNK) {
      const chunk = events.slice(i, i + EVENT_CHUNK);
      if (this.dialect === 'postgres') {
        // The rows and, with `notify`, the cluster's wake-up (delivered at commit).
        const wake = o.notify && this.eventsChannel;
        const res = await sql<{ id: number; tx: string }>`
          with ins as (${insertEventsSql(chunk)})${wake ? sql`, wake as (select ${wakeEventsSql(this.eventsChannel!)})` : sql``}
          select ins.id, ins.tx from ins${wake ? sql`, wake` : sql``} order by ins.id`.execute(tx);
        written.push(...res.rows.map((r) => ({ id: Number(r.id), tx: r.tx })));
      } else {
        const values = chunk.map((e) => ({ run_id: e.runId, seq: e.seq, stream: e.stream, ts: e.ts, session_key: e.sessionKey, data: JSON.stringify(e.data) }));
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
   * Events after a cursor, in log order, an ended run's folded deltas expanded (server/store/event-fold.ts). On
   * PostgreSQL only rows of settled transactions (below SETTLED_XID, server/store/settled.ts) are returned, so a row that commits late
   * is never skipped; `pending` says more may come.
   */
  async eventsAfter(o: { after: EventCursor; sessionKey?: string; runId?: string; limit: number }): Promise<LogPage> {
    const after = this.dialect === 'postgres' && o.after.tx === undefined ? await this.resolveCursor(o.after) : o.after;
    return readEventsAfter(this.db, this.dialect, { ...o, after });
  }

  /** Folds an ended run's text deltas into one row each (server/store/event-fold.ts); the rows deleted. */
  foldRun(runId: string): Promise<number> {
    return foldRun(this.db, this.dialect, runId);
  }

  /** Whether ended runs' deltas are folded (`CROSSTALK_FOLD_DELTAS=0`: not). */
  foldDeltas = process.env.CROSSTALK_FOLD_DELTAS !== '0';
  private folds: Promise<unknown> = Promise.resolve();

  /**
   * Folds a run whose end is committed, after the folds queued before it (one at a time, off the run's path).
   * `steps`: its folds, known when its whole log was written with its end (`finishRun`'s `folds`): none left to do
   * (done with the end on SQLite, or nothing to fold), or on PostgreSQL one statement each without reading the log.
   */
  foldLater(runId: string, onError: (e: unknown) => void, steps?: FoldStep[]): void {
    if (!this.foldDeltas || steps?.length === 0) return;
    this.folds = this.folds.then(() => (steps && this.dialect === 'postgres' ? foldWrittenPg(this.db, runId, steps) : this.foldRun(runId))).catch(onError);
  }

  /** Resolves when the folds queued so far are done (tests, benches, a graceful stop). */
  foldsSettled(): Promise<unknown> {
    return this.folds;
  }

  /** A plain event id (an older client's Last-Event-ID) as a full cursor: just before that event's place. */
  async resolveCursor(c: EventCursor): Promise<EventCursor> {
    if (c.tx !== undefined || this.dialect !== 'postgres') return c;
    if (c.id === 0) return START;
    return (await resolvePlainId(this.db, c.id)) ?? START;
  }

  /**
   * Whether a cursor lies past the end of the log — one it never issued (an id above every event's, or on
   * PostgreSQL a transaction not begun yet). Replayed from, it would skip the events that later take its place.
   */
  cursorBeyondLog(c: EventCursor): Promise<boolean> {
    return cursorBeyondLog(this.db, this.dialect, c);
  }

  /** A position every settled row is at or before (PostgreSQL): just below SETTLED_XID. */
  settledHorizon(): Promise<EventCursor> {
    return settledHorizon(this.db);
  }

  /** The newest settled position of the log (PostgreSQL): a live reader starts after it. */
  logHead(): Promise<EventCursor> {
    return logHead(this.db, this.dialect);
  }

  // ── runs' state as every process sees it (queued, in flight) ───────────

  queuedRuns(sessionKey: string): Promise<RunRow[]> {
    return this.db.selectFrom('runs').selectAll().where('session_key', '=', sessionKey).where('status', '=', 'queued').orderBy('created_at').orderBy('id').execute();
  }

  /** Ends a run that has not started (from any process); false when it had started or ended meanwhile. */
  async endQueued(runId: string, error: string): Promise<boolean> {
    const changes: DeliveryChange[] = [];
    const ended = await this.db.transaction().execute(async (tx) => {
      const run = await tx.updateTable('runs').set({ status: 'error', error, ended_at: nowIso() }).where('id', '=', runId).where('status', '=', 'queued').returning(['id', 'input', 'origin']).executeTakeFirst();
      if (!run) return false;
      // The hand-offs it carried fail with it (CONTRACT §9): left as they were, they stayed on their way for good.
      for (const f of queuedRunDeliveries(run, error)) changes.push(...(await advanceDeliveries(tx, f.ids, 'failed', { error: { code: 'interrupted', message: f.message } })));
      return true;
    });
    this.announce(changes);
    return ended;
  }

  /** The session's run in flight (running, or paused on an approval), on whichever process drives it. */
  async activeRunOf(sessionKey: string): Promise<string | undefined> {
    const r = await this.db.selectFrom('runs').select('id').where('session_key', '=', sessionKey).where('status', 'in', IN_FLIGHT).limit(1).executeTakeFirst();
    return r?.id;
  }

  /**
   * Where to replay a session's run in flight from (as `activeRunOf`): just before its first event, so a reader that
   * opens the session mid-run gets the run's text so far. Undefined when none is in flight (or it wrote nothing yet).
   */
  async activeRunStart(sessionKey: string): Promise<EventCursor | undefined> {
    const runId = await this.activeRunOf(sessionKey);
    return runId ? runStartCursor(this.db, this.dialect, runId) : undefined;
  }

  /** Of these sessions, those with a run in flight (as `activeRunOf`), in one statement. */
  async activeAmong(keys: string[]): Promise<Set<string>> {
    if (!keys.length) return new Set();
    const rows = await this.db.selectFrom('runs').select('session_key').distinct().where('session_key', 'in', keys).where('status', 'in', IN_FLIGHT).execute();
    return new Set(rows.map((r) => r.session_key));
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
