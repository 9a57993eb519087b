// Repositories over the Kysely database: every query the gateway runs, keyset-paged and bounded. Sessions,
// transcripts and runs here; the session lists in SessionLists; fencing (leases' epochs, fenced run writes) in
// FencedStore; the event log, approvals, callbacks, webhooks and idempotency in StoreBase.
import { type ExpressionBuilder, type Kysely, sql, type UpdateObject } from 'kysely';
import { retryConflicts } from './pg-errors';
import type { PendingEvent, TranscriptMessage } from '../events/types';
import type { DbHandle } from './db';
import { ClaimTaken, claimCutoff, type IdempotencyClaim, insertClaim } from './idempotency';
import { appendPg, type FinishPg, finishPg, finishPgOne, type MessageValues, messageValues, queuedBehindLock, rowBytes, type UsageValues, withoutRowEvents } from './run-writes';
import type { CallbackRow, Database, MessageRow, RunRow, SessionRow, WebhookRow } from './schema';
import { deleteAndArchive } from './session-archive';
import { SessionLists } from './session-lists';
import { type FoldStep, foldPlan, foldSteps, wholeRunLog } from './event-fold';
import { HotSqlite } from './hot-sqlite';
import { RecentRows } from './recent-rows';
import { advanceDeliveries, type DeliveryChange, type DeliveryRowJson, insertDeliveries, metaDeliveries, movedChanges, type NewDelivery, rowDeliveries } from './deliveries';
import { FencedError, type NewMessage, type NewSession, nowIso, sessionValues, toTranscriptMessage } from './store-base';

export { FencedError, type NewMessage, type NewSession, nowIso, toTranscriptMessage } from './store-base';

/** What a run's end does to deliveries: those it answered or failed, and the new ones it owes (its callbacks). */
export interface RunEndDeliveries {
  answered: string[];
  failed: Array<{ ids: string[]; error: { code: string; message: string } }>;
  created: NewDelivery[];
}

/** A run's events logged so far with their log ids. */
type EventsLogged = { events: PendingEvent[]; ids: Array<{ id: number; tx?: string }> };

/** A run's start: its input rows in the transcript, and (PostgreSQL) the session row after it. */
export interface StartedRun {
  rows: TranscriptMessage[];
  session?: SessionRow;
}

export class Store extends SessionLists {
  /** In-memory recent rows are only safe unchecked while this process is the store's only writer (the embedded SQLite). */
  private readonly recent: RecentRows;
  /** SQLite: a turn's statements prepared once and run without Kysely's builder. */
  private readonly hot?: HotSqlite;

  constructor(handle: DbHandle) {
    super(handle);
    this.recent = new RecentRows(handle.dialect === 'sqlite');
    if (handle.sqlite) this.hot = new HotSqlite(handle.sqlite, handle.db);
  }

  /** The prepared path (SQLite) for rows of one unfenced session that move no deliveries; else the Kysely path. */
  private hotFor(key: string, msgs: NewMessage[]): HotSqlite | undefined {
    return this.hot && !this.fences.has(key) && msgs.every((m) => m.sessionKey === key && !m.meta?.deliveryId && !m.meta?.answersDeliveryId) ? this.hot : undefined;
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
    if (this.hot) return this.hot.getSession(key);
    return this.db.selectFrom('sessions').selectAll().where('key', '=', key).executeTakeFirst();
  }

  /** Creates the session when missing; returns the stored row either way. */
  async ensureSession(s: NewSession): Promise<SessionRow> {
    if (this.hot) return this.hot.ensureSession(sessionValues(s, nowIso()));
    const existing = await this.getSession(s.key);
    if (existing) return existing;
    await this.db
      .insertInto('sessions')
      .values(sessionValues(s, nowIso()))
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    return (await this.getSession(s.key))!;
  }

  async patchSession(key: string, fields: Partial<Pick<SessionRow, 'model' | 'thinking_level' | 'label' | 'spawn_depth' | 'queue_mode' | 'status' | 'meta' | 'dismissed_at'>>) {
    if (Object.keys(fields).length) await this.db.updateTable('sessions').set(fields).where('key', '=', key).execute();
    return this.getSession(key);
  }

  /** Deletes a session; what it keeps moves to an archive key (./session-archive). */
  async deleteSession(key: string, deleteTranscript: boolean): Promise<void> {
    this.recent.delete(key);
    await this.db.transaction().execute((tx) => deleteAndArchive(tx, key, deleteTranscript));
  }

  // ── transcript ─────────────────────────────────────────────────────────

  /**
   * Appends rows in one transaction and bumps the session's counters. `run`: a run's own rows (clustered, refused with
   * no fence for the session here: `refuseUnfenced`); rows from outside a run (a mirror, a notice) are not fenced.
   */
  /** `merge` (PostgreSQL): steered messages' queued runs, merged into the run these rows join in the same statement. */
  async appendMessages(msgs: NewMessage[], o: { run?: boolean; merge?: { runIds: string[]; into: string } } = {}): Promise<TranscriptMessage[]> {
    if (!msgs.length) return [];
    const key = msgs[0]!.sessionKey;
    if (o.run) this.refuseUnfenced(key);
    const mirrorsDelivery = msgs.some((m) => m.kind === 'mirror' && m.meta?.deliveryId);
    if (this.dialect === 'postgres' && !mirrorsDelivery && msgs.every((m) => m.sessionKey === key)) return (await this.appendPgRows(key, msgs, { usage: this.takeUsage(msgs), ...(o.merge ? { merge: o.merge } : {}) })).rows;
    const usage = this.takeUsage(msgs);
    const hot = this.hotFor(key, msgs);
    if (hot) {
      const ts = nowIso();
      const values = msgs.map((m) => messageValues(m, ts));
      return this.writtenRows(values, await hot.append(key, values, usage, ts));
    }
    const changes: DeliveryChange[] = [];
    const out = await this.db.transaction().execute(async (tx) => {
      if (usage.length) await tx.insertInto('model_usage').values(usage).execute();
      return this.appendIn(tx, msgs, changes);
    });
    this.remember(out);
    this.announce(changes);
    return out;
  }

  /**
   * Appends rows (in `tx`); a row a delivery put there (its meta names it) moves that delivery to `running` in the
   * same transaction: the target has it, and its run is the one taking it in (`changes` collects what moved).
   */
  private async appendIn(tx: Kysely<Database>, msgs: NewMessage[], changes?: DeliveryChange[]): Promise<TranscriptMessage[]> {
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
    // A mirror row records a channel's 2xx (delivered); any other row is a message its target's run takes in (running),
    // and a callback row answers the hand-off whose answer it carries (`rowDeliveries`).
    const taken = metaDeliveries(out.filter((m) => m.kind !== 'mirror').map((m) => m.meta));
    if (taken.running.length) changes?.push(...(await advanceDeliveries(tx, taken.running, 'running', {}, ['delivered'])));
    if (taken.answered.length) changes?.push(...(await advanceDeliveries(tx, taken.answered, 'answered', { error: null })));
    const sent = metaDeliveries(out.filter((m) => m.kind === 'mirror').map((m) => m.meta)).running;
    if (sent.length) changes?.push(...(await advanceDeliveries(tx, sent, 'delivered', { attempt: true, error: null })));
    return out;
  }

  /**
   * A run starts: its status, the session's, and its input rows in one transaction (on PostgreSQL one
   * statement). Null when the run is no longer queued (cancelled meanwhile, from any process): it must not run.
   * `session` (PostgreSQL): the session row after the write, so the run need not read it again.
   */
  async startRun(runId: string, sessionKey: string, msgs: NewMessage[]): Promise<StartedRun | null> {
    this.refuseUnfenced(sessionKey); // only a run's own start, by the process driving it
    if (this.dialect === 'postgres' && msgs.every((m) => m.sessionKey === sessionKey)) {
      const r = await this.appendPgRows(sessionKey, msgs, { startRun: runId });
      return r.started ? { rows: r.rows, ...(r.session ? { session: r.session } : {}) } : null;
    }
    const hot = this.hotFor(sessionKey, msgs);
    if (hot) {
      const ts = nowIso();
      const values = msgs.map((m) => messageValues(m, ts));
      const r = await hot.startRun(runId, sessionKey, values, ts);
      return r && { rows: this.writtenRows(values, r.ids, r.session), ...(r.session ? { session: r.session } : {}) };
    }
    const changes: DeliveryChange[] = [];
    const out = await this.db.transaction().execute(async (tx) => {
      const r = await tx.updateTable('runs').set({ status: 'running', started_at: nowIso() }).where('id', '=', runId).where('status', '=', 'queued').executeTakeFirst();
      if (Number(r.numUpdatedRows) !== 1) return null;
      await this.touchSession(tx, sessionKey, { status: 'running' });
      return this.appendIn(tx, msgs, changes);
    });
    if (out) this.remember(out);
    this.announce(changes);
    return out && { rows: out };
  }

  /** PostgreSQL: one session's rows in one statement (`appendPg`, fenced, moving their deliveries), as transcript rows. */
  private async appendPgRows(key: string, msgs: NewMessage[], o: { usage?: UsageValues[]; startRun?: string; merge?: { runIds: string[]; into: string } }) {
    const values = msgs.map((m) => messageValues(m, nowIso()));
    const moves = rowDeliveries(values.map((v) => v.meta));
    const r = await retryConflicts(() => appendPg(this.db, { key, epoch: this.fences.get(key), rows: values, moves, ...o }));
    if (!r.held) await this.lostSession(key);
    this.announceMoved(r.deliveries);
    return { ...r, rows: this.writtenRows(values, r.ids, r.session) };
  }

  /** Deliveries a PostgreSQL statement moved with its rows' write: to `running` (through `delivered`), or `answered`. */
  announceMoved(rows: DeliveryRowJson[] | null | undefined): void {
    if (rows?.length) this.announce(movedChanges(rows));
  }

  /** Rows written with these ids (a run's start by `enqueuePg`, an append) as transcript rows, cached; with `session` (the
   * row after the write), rows that are its whole transcript (a first turn) become its cached context, not read back. */
  writtenRows(rows: MessageValues[], ids: number[], session?: SessionRow): TranscriptMessage[] {
    const out = rows.map((row, i) => toTranscriptMessage({ ...row, id: ids[i]! }));
    if (session && out.length && Number(session.message_count) === out.length && out.every((m) => m.sessionKey === session.key)) this.recent.seed(session.key, out, out.length);
    else this.remember(out);
    return out;
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

  /** A session's newest compaction row, from `messages_compaction` (its predicate matches only a literal kind). */
  newestCompaction(sessionKey: string): Promise<MessageRow | undefined> {
    return this.db.selectFrom('messages').selectAll().where('session_key', '=', sessionKey).where('kind', '=', sql.lit('compaction')).orderBy('id', 'desc').limit(1).executeTakeFirst();
  }

  // ── recent rows for model context (./recent-rows) ──────────────────────

  /** The newest `n` rows of a session, oldest first (tool rows included). */
  async contextRows(sessionKey: string, n: number, messageCount?: number): Promise<TranscriptMessage[]> {
    const hit = this.recent.get(sessionKey, n, messageCount);
    if (hit) return hit;
    const rows = (this.hot ? await this.hot.newestRows(sessionKey, n) : await this.history({ sessionKey, limit: n, includeTools: true })).reverse().map(toTranscriptMessage);
    this.recent.put(sessionKey, n, rows, messageCount);
    return rows;
  }

  private remember(rows: TranscriptMessage[]) {
    this.recent.remember(rows);
  }

  // ── runs ────────────────────────────────────────────────────────────────

  /** With `claim`, the request's idempotency key is claimed in the same transaction (ClaimTaken: nothing written). */
  async insertRun(r: RunRow, claim?: IdempotencyClaim): Promise<void> {
    if (this.hot) {
      const now = nowIso();
      if (!(await this.hot.insertRun(r, claim && { c: claim, now, cutoff: claimCutoff() }))) throw new ClaimTaken(claim!.key);
      return;
    }
    if (!claim) {
      await this.db.insertInto('runs').values(r).execute();
      return;
    }
    await this.db.transaction().execute(async (tx) => {
      if (!(await insertClaim(tx, claim))) throw new ClaimTaken(claim.key);
      await tx.insertInto('runs').values(r).execute();
    });
  }

  /** SQLite: whether a message for this session can start its run through `startNew` (the prepared path). */
  canStartNew(key: string, msgs: NewMessage[]): boolean {
    return !!this.hotFor(key, msgs);
  }

  /**
   * SQLite (`canStartNew`): what `ensureSession`, `insertRun` (ClaimTaken: nothing written) and `startRun` do, in ONE
   * transaction; `row` becomes the row as written (running, its queue mode `mode(session)`).
   */
  async startNew(row: RunRow, msgs: NewMessage[], session: NewSession, mode: (s: SessionRow) => string, claim?: IdempotencyClaim): Promise<StartedRun> {
    const ts = nowIso();
    const values = msgs.map((m) => messageValues(m, ts));
    const r = await this.hot!.startNew({ session: sessionValues(session, ts), run: row, mode, claim: claim && { c: claim, now: ts, cutoff: claimCutoff() }, rows: values, ts });
    if (!r) throw new ClaimTaken(claim!.key);
    return { rows: this.writtenRows(values, r.ids, r.session), session: r.session };
  }

  /** A `collect` message joins a queued run's input; with `claim`, its idempotency key is claimed in the same transaction. */
  async mergeInput(runId: string, input: string, claim?: IdempotencyClaim): Promise<void> {
    if (!claim) {
      await this.db.updateTable('runs').set({ input }).where('id', '=', runId).execute();
      return;
    }
    await this.db.transaction().execute(async (tx) => {
      if (!(await insertClaim(tx, claim))) throw new ClaimTaken(claim.key);
      await tx.updateTable('runs').set({ input }).where('id', '=', runId).execute();
    });
  }

  getRun(id: string): Promise<RunRow | undefined> {
    if (this.hot) return this.hot.getRun(id);
    return this.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * Records a run's end together with its last rows, its usage, the callbacks and webhooks it owes, and its
   * events (`o.events`, prepared once the rows have their ids), atomically: on PostgreSQL one statement when it owes
   * nothing to others, else one transaction. Fenced: a process that lost the session's lease records nothing
   * (FencedError). With `idle` the session goes idle and, with `release`, its lease is released unless queued work
   * is visible (`released` false: this process keeps the lease and must run that work). Returns the events
   * written and their log ids, for `EventBus.logged`; and `folds`, the run's delta folds when its whole log is known
   * (`before`: its events logged earlier, `EventBus.loggedOf`) for `foldLater` (empty: folded with the end, or none).
   */
  async finishRun(
    id: string,
    fields: Partial<Omit<RunRow, 'id'>>,
    callbacks: CallbackRow[],
    webhooks: WebhookRow[],
    session: { key: string; idle: boolean; release?: boolean; leased?: boolean },
    o: { messages?: NewMessage[]; events?: (rows: TranscriptMessage[]) => PendingEvent[]; deliveries?: RunEndDeliveries; logged?: (events: PendingEvent[], ids: Array<{ id: number; tx?: string }>) => void; before?: EventsLogged | null } = {},
  ): Promise<{ released: boolean; events: PendingEvent[]; ids: Array<{ id: number; tx?: string }>; folds?: FoldStep[] }> {
    // `leased`: the run was driven under a lease (several processes). With no fence for its session here (its state
    // was dropped and its fence cleared), its end is not written unchecked: it is someone else's run now.
    this.refuseUnfenced(session.key, !!session.leased);
    const usage = this.takeUsage([id]);
    const msgs = o.messages ?? [];
    const pg = this.dialect === 'postgres' && msgs.every((m) => m.sessionKey === session.key);
    const dl = o.deliveries;
    const owesDeliveries = !!dl && (dl.answered.length > 0 || dl.failed.length > 0 || dl.created.length > 0);
    const changes: DeliveryChange[] = [];
    // The one-statement attempt's events (their seqs are taken): the fallback below reuses them, never prepares twice.
    let first: { events: PendingEvent[]; messageOf: number[] } | undefined;
    const hot = !pg && !callbacks.length && !webhooks.length && !owesDeliveries && !session.release ? this.hotFor(session.key, msgs) : undefined;
    if (hot) {
      // SQLite, nothing owed to others: the prepared statements in one transaction.
      const ts = nowIso();
      const values = msgs.map((m) => messageValues(m, ts));
      let rows: TranscriptMessage[] = [];
      const events = (ids: number[]) => {
        rows = values.map((v, i) => toTranscriptMessage({ ...v, id: ids[i]! }));
        return o.events?.(rows) ?? [];
      };
      const r = await hot.finishRun({ runId: id, fields, key: session.key, idle: session.idle, usage, rows: values, events, logged: o.logged, ...(this.foldDeltas ? { fold: { before: o.before ?? null } } : {}) }, ts);
      this.remember(rows);
      return { released: false, events: r.events, ids: r.eventIds, ...(r.folded ? { folds: [] } : {}) };
    }
    if (pg && !callbacks.length && !webhooks.length && !owesDeliveries) {
      // The common end (nothing owed to other sessions or URLs): one statement.
      const values = msgs.map((m) => messageValues(m, nowIso()));
      const rows = values.map((v) => toTranscriptMessage({ ...v, id: 0 }));
      const events = o.events?.(rows) ?? [];
      const messageOf = events.map((e) => rows.indexOf((e.data as { message?: TranscriptMessage }).message as TranscriptMessage));
      const b = o.before;
      // Its whole log written here: its deltas folded in the same statement (none written to be folded later).
      const fold = this.foldDeltas && !b?.events.length ? foldPlan(id, events) : null;
      const r = await retryConflicts(() => finishPgOne(this.db, { key: session.key, epoch: this.fences.get(session.key), runId: id, set: fields as FinishPg['set'], rows: values, usage, idle: session.idle, release: !!session.release, events, messageOf, notify: this.eventsChannel, fold }));
      if (r.held) {
        rows.forEach((row, i) => (row.id = r.ids[i]!));
        this.remember(rows);
        o.logged?.(events, r.events);
        if (fold) return { released: r.released, events, ids: r.events, folds: [] };
        const whole = this.foldDeltas ? wholeRunLog(id, b ? [...b.events, ...events] : events, b ? [...b.ids, ...r.events] : r.events) : null;
        return { released: r.released, events, ids: r.events, ...(whole ? { folds: foldSteps(whole) } : {}) };
      }
      first = { events, messageOf };
      // Nothing was written: the transaction below tells a deleted session from a lost lease.
    }
    // On PostgreSQL a deadlock rolls the transaction back whole: it is made again, with the events prepared once.
    let prepared: { rows: TranscriptMessage[]; events: PendingEvent[] } | undefined;
    const out = await (pg ? retryConflicts : <T>(f: () => Promise<T>) => f())(() => this.loggedTx(async (tx) => {
      changes.length = 0;
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
            if (prepared) prepared.rows.forEach((r, i) => (r.id = msgIds[i]!)); // the events carry these rows
            else {
              const made = values.map((v, i) => toTranscriptMessage({ ...v, id: msgIds[i]! }));
              prepared = { rows: made, events: o.events?.(made) ?? [] };
            }
            rows = prepared.rows;
            return (events = prepared.events);
          },
          notify: this.eventsChannel,
        });
        if (r.held) {
          released = r.released;
          ids = r.events;
        } else {
          await this.lostSession(session.key, true, tx); // FencedError unless the session was deleted under the run
          // Deleted: the run's end and its events are logged, its last rows (and their events) are not; only while
          // the run is unfinished (a zombie's late end must not overwrite the end its re-driver wrote).
          if (!first) first = prepared ? { events: prepared.events, messageOf: prepared.events.map((e) => prepared!.rows.indexOf((e.data as { message?: TranscriptMessage }).message!)) } : { events: o.events?.([]) ?? [], messageOf: [] };
          events = withoutRowEvents(first.events, first.messageOf);
          const last = events.findLast((e) => e.runId === id)?.seq;
          const ended = await tx
            .updateTable('runs')
            .set(last === undefined ? fields : { ...fields, last_seq: last })
            .where('id', '=', id)
            .where('status', 'in', ['running', 'waiting_approval', 'queued'])
            .executeTakeFirst();
          if (Number(ended.numUpdatedRows) === 1) ids = await this.insertEventsIn(tx, events, { notify: true });
          else events = [];
        }
      } else {
        await tx.updateTable('runs').set(fields).where('id', '=', id).execute();
        if (session.idle && session.release) {
          released = !(await queuedBehindLock(tx, session.key));
        }
        if (usage.length) await tx.insertInto('model_usage').values(usage).execute();
        if (msgs.length) rows = await this.appendIn(tx, msgs);
        await this.touchSession(tx, session.key, session.idle ? (released ? { status: 'idle', owner: null } : { status: 'idle' }) : { status: 'running' }, { allowMissing: true });
        events = o.events?.(rows) ?? [];
        ids = await this.insertEventsIn(tx, events, { notify: true });
      }
      if (callbacks.length) await tx.insertInto('callbacks').values(callbacks).onConflict((oc) => oc.column('id').doNothing()).execute();
      if (webhooks.length) changes.push(...(await this.insertWebhooks(tx, webhooks)));
      // The deliveries this run answered or failed, and the callbacks it owes, with the run's end (CONTRACT §9).
      if (dl) {
        changes.push(...(await advanceDeliveries(tx, dl.answered, 'answered', { error: null })));
        for (const f of dl.failed) changes.push(...(await advanceDeliveries(tx, f.ids, 'failed', { error: f.error })));
        changes.push(...(await insertDeliveries(tx, dl.created)));
      }
      return { released, rows, events, ids };
    }, o.logged && ((r) => o.logged!(r.events, r.ids))));
    this.remember(out.rows);
    this.announce(changes);
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

  /** Releases an idle session's lease unless queued work arrived (then false: the holder keeps it and runs that). */
  async releaseIfIdle(sessionKey: string, owner: string): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      if (await queuedBehindLock(tx, sessionKey)) return false;
      await tx.updateTable('sessions').set({ owner: null, status: 'idle' }).where('key', '=', sessionKey).where('owner', '=', owner).execute();
      return true;
    });
  }
}
