// SQLite's hot statements (a turn's run insert, start, appends and end; the session and run reads): prepared once and
// run synchronously without Kysely's query builder, each write one better-sqlite3 transaction, all of it under
// Kysely's connection lock so no Kysely query or transaction of another caller interleaves. The store falls back to
// its Kysely path for what this does not cover (fenced sessions, deliveries, callbacks and webhooks owed).
import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import type { PendingEvent } from '../events/types';
import { foldPlan, foldSteps, type PlannedFold, wholeRunLog } from './event-fold';
import type { IdempotencyClaim } from './idempotency';
import { type MessageValues, rowBytes, type UsageValues } from './run-writes';
import type { Database, MessageRow, RunRow, SessionRow } from './schema';

type Params = Array<string | number | bigint | null>;

const MESSAGE_COLS = ['session_key', 'role', 'kind', 'content', 'created_at', 'run_id', 'author_type', 'author_id', 'author_name', 'tool_name', 'tool_call_id', 'tool_args', 'tool_result', 'meta'] as const;
const USAGE_COLS = ['run_id', 'session_key', 'agent_id', 'model', 'kind', 'input_tokens', 'output_tokens', 'cached_tokens', 'cost_usd', 'priced', 'created_at', 'root_run_id'] as const;
/** Events per statement: one prepared statement per chunk size up to this. */
const EVENT_CHUNK = 32;
const q = (c: string) => `"${c}"`;
const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');
const EVENT_COLS = ['run_id', 'seq', 'stream', 'ts', 'session_key', 'data'] as const;
const FOLDED_COLS = ['id', ...EVENT_COLS, 'fold_id'] as const;
/** Texts by their column list (one of the constants above), then by row count and tail. */
const insertTexts = new Map<readonly string[], Map<string, string>>();
/**
 * The insert of `n` rows of `cols` into `table` (then `tail`), its text built once per shape: a text is the key of
 * its prepared statement (`st`), and building it again at every write was garbage on the run's path.
 */
function insertRows(table: string, cols: readonly string[], n: number, tail = ''): string {
  let byShape = insertTexts.get(cols);
  if (!byShape) insertTexts.set(cols, (byShape = new Map()));
  const key = `${table} ${n}${tail}`;
  let t = byShape.get(key);
  if (t === undefined) {
    const row = `(${marks(cols.length)})`;
    byShape.set(key, (t = `insert into ${q(table)} (${cols.map(q).join(', ')}) values ${Array.from({ length: n }, () => row).join(', ')}${tail}`));
  }
  return t;
}

/** The columns of `o` that are set (undefined ones are left out, as Kysely leaves them). */
const setCols = (o: object) => Object.keys(o).filter((c) => (o as Record<string, unknown>)[c] !== undefined);

export interface HotFinish {
  runId: string;
  fields: Partial<Omit<RunRow, 'id'>>;
  key: string;
  idle: boolean;
  usage: UsageValues[];
  rows: MessageValues[];
  /** The events to log, built once the rows have their ids. */
  events: (ids: number[]) => PendingEvent[];
  /** Hands the written events on, right after the commit and before the connection is let go (log order). */
  logged?: (events: PendingEvent[], ids: Array<{ id: number }>) => void;
  /**
   * Fold the run's text deltas in the same transaction when these events, after `before` (its events logged
   * earlier), are its whole log (server/store/event-fold.ts).
   */
  fold?: { before: { events: PendingEvent[]; ids: Array<{ id: number }> } | null };
}

/** A write waiting for the group commit. */
interface GroupedWrite {
  fn: () => unknown;
  committed?: (r: unknown) => void;
  resolve: (r: unknown) => void;
  reject: (e: unknown) => void;
}

/** How long one group commit may run its writes before leaving the rest to the next hand-over of the connection. */
const GROUP_BUDGET_MS = 4;

export class HotSqlite {
  private readonly stmts = new Map<string, BetterSqlite3.Statement>();
  private readonly inTx: (fn: () => unknown) => unknown;

  constructor(
    private readonly raw: BetterSqlite3.Database,
    private readonly db: Kysely<Database>,
  ) {
    this.inTx = raw.transaction((fn: () => unknown) => fn());
  }

  private st(text: string): BetterSqlite3.Statement {
    let s = this.stmts.get(text);
    if (!s) this.stmts.set(text, (s = this.raw.prepare(text)));
    return s;
  }

  /**
   * Runs `fn` holding Kysely's connection lock (SQLite has one connection); then `committed`, still holding it. A
   * write (`write`) is committed with the writes queued behind the lock with it, one transaction for the group (group
   * commit), each write in a savepoint of its own: one that throws is rolled back alone and rejects alone.
   */
  private locked<T>(fn: () => T, write: boolean, committed?: (r: T) => void): Promise<T> {
    if (!write)
      return this.db.connection().execute(async () => {
        const r = fn();
        committed?.(r);
        return r;
      });
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ fn, committed: committed as ((r: unknown) => void) | undefined, resolve: resolve as (r: unknown) => void, reject });
      this.requestFlush();
    });
  }

  // Why a group: every commit writes each B-tree page it touched as a WAL frame (~40 a turn: "Stop 37" in
  // BENCHMARKS.md), and the newest pages of messages, events, runs and their indexes are the same for every run. With
  // 50 runs at once their writes queue behind the connection; one commit for the queue writes those pages once.
  // A write asked for after a read still joins a group that was waiting before that read: the read then runs after
  // the write and sees it (a newer state than when it was asked for, never an older one).
  private pending: GroupedWrite[] = [];
  private flushRequested = false;

  private requestFlush(): void {
    if (this.flushRequested) return;
    this.flushRequested = true;
    void this.db
      .connection()
      .execute(async () => {
        this.flushRequested = false; // writes queued from here on wait for the next hand-over
        this.commitGroup(this.pending.splice(0));
      })
      .catch((e) => {
        // The connection could not be had (the store is closing): nothing queued can be written.
        for (const w of this.pending.splice(0)) w.reject(e);
      });
  }

  /** The group's writes in one transaction, each in a savepoint, while GROUP_BUDGET_MS lasts; the rest go to the next hand-over. */
  private commitGroup(group: GroupedWrite[]): void {
    if (!group.length) return;
    const done: Array<{ w: GroupedWrite; ok: boolean; value: unknown }> = [];
    const t0 = performance.now();
    try {
      this.inTx(() => {
        for (const w of group) {
          if (done.length && performance.now() - t0 > GROUP_BUDGET_MS) break;
          if (group.length === 1) done.push({ w, ok: true, value: w.fn() });
          else
            try {
              done.push({ w, ok: true, value: this.inTx(w.fn) });
            } catch (e) {
              done.push({ w, ok: false, value: e });
            }
        }
      });
    } catch (e) {
      // The commit (or a lone write) failed: none of the group was written.
      for (const w of group.slice(0, Math.max(done.length, 1))) w.reject(e);
      this.requeue(group.slice(Math.max(done.length, 1)));
      return;
    }
    for (const { w, ok, value } of done) {
      if (!ok) {
        w.reject(value);
        continue;
      }
      try {
        w.committed?.(value);
        w.resolve(value);
      } catch (e) {
        w.reject(e);
      }
    }
    this.requeue(group.slice(done.length));
  }

  private requeue(rest: GroupedWrite[]): void {
    if (!rest.length) return;
    this.pending.unshift(...rest);
    this.requestFlush();
  }

  getSession(key: string): Promise<SessionRow | undefined> {
    return this.locked(() => this.st('select * from "sessions" where "key" = ?').get(key) as SessionRow | undefined, false);
  }

  /** The session, created (`values`: its new row) when missing. */
  ensureSession(values: Record<string, unknown>): Promise<SessionRow> {
    return this.locked(() => {
      const get = this.st('select * from "sessions" where "key" = ?');
      const hit = get.get(values.key) as SessionRow | undefined;
      if (hit) return hit;
      const cols = setCols(values);
      this.st(`insert into "sessions" (${cols.map(q).join(', ')}) values (${marks(cols.length)}) on conflict ("key") do nothing`).run(cols.map((c) => values[c]) as Params);
      return get.get(values.key) as SessionRow;
    }, false);
  }

  /** The newest `n` rows of a session, newest first. */
  newestRows(key: string, n: number): Promise<MessageRow[]> {
    return this.locked(() => this.st('select * from "messages" where "session_key" = ? order by "id" desc limit ?').all(key, n) as MessageRow[], false);
  }

  getRun(id: string): Promise<RunRow | undefined> {
    return this.locked(() => this.st('select * from "runs" where "id" = ?').get(id) as RunRow | undefined, false);
  }

  /** Inserts a run; with `claim` first claims its idempotency key (false: taken, nothing written). */
  insertRun(r: RunRow, claim: { c: IdempotencyClaim; now: string; cutoff: string } | undefined): Promise<boolean> {
    return this.locked(() => {
      if (claim && !this.claim(claim.c, claim.now, claim.cutoff)) return false;
      const cols = setCols(r);
      this.st(`insert into "runs" (${cols.map(q).join(', ')}) values (${marks(cols.length)})`).run(cols.map((c) => (r as Record<string, unknown>)[c]) as Params);
      return true;
    }, true);
  }

  /**
   * A message that starts a run at once (nothing active on its session in this process), in ONE transaction: the
   * session created when missing (`session`: its new row), the idempotency key claimed (`claim`; null when taken:
   * nothing of the run is written), the run inserted already running (its `queue_mode` from `mode`, given the session
   * row; `run` is updated to the row as written), the session running with the input rows counted, the rows.
   */
  startNew(o: {
    session: Record<string, unknown>;
    run: RunRow;
    mode: (s: SessionRow) => string;
    claim: { c: IdempotencyClaim; now: string; cutoff: string } | undefined;
    rows: MessageValues[];
    ts: string;
  }): Promise<{ ids: number[]; session: SessionRow } | null> {
    return this.locked(() => {
      const key = o.run.session_key;
      const get = this.st('select * from "sessions" where "key" = ?');
      let before = get.get(key) as SessionRow | undefined;
      if (!before) {
        const cols = setCols(o.session);
        before = this.st(`insert into "sessions" (${cols.map(q).join(', ')}) values (${marks(cols.length)}) returning *`).get(cols.map((c) => o.session[c]) as Params) as SessionRow;
      }
      if (o.claim && !this.claim(o.claim.c, o.claim.now, o.claim.cutoff)) return null;
      const r = o.run;
      Object.assign(r, { queue_mode: o.mode(before), status: 'running', started_at: o.ts });
      const cols = setCols(r);
      this.st(`insert into "runs" (${cols.map(q).join(', ')}) values (${marks(cols.length)})`).run(cols.map((c) => (r as Record<string, unknown>)[c]) as Params);
      const session = this.st(`update "sessions" set "status" = 'running', "message_count" = "message_count" + ?, "bytes" = "bytes" + ?, "last_activity_at" = ? where "key" = ? returning *`).get(o.rows.length, bytesOf(o.rows), o.rows.length ? o.ts : before.last_activity_at, key) as SessionRow;
      return { ids: this.insertMessages(o.rows), session };
    }, true);
  }

  /** `insertClaim`'s statement: inserted, or an expired row taken over. */
  private claim(c: IdempotencyClaim, now: string, cutoff: string): boolean {
    const v = [JSON.stringify(c.result ?? null), c.settled ? 'done' : 'pending', c.settled ? null : c.owner, c.runId ?? null, now];
    const r = this.st(
      'insert into "idempotency" ("key", "result", "state", "owner", "run_id", "created_at") values (?, ?, ?, ?, ?, ?) ' +
        'on conflict ("key") do update set "result" = ?, "state" = ?, "owner" = ?, "run_id" = ?, "created_at" = ? where "idempotency"."created_at" < ?',
    ).run(c.key, ...v, ...v, cutoff);
    return r.changes === 1;
  }

  /** A run's start: running, the session running with its input rows counted (the row after it), the rows' ids; null when no longer queued. */
  startRun(runId: string, key: string, rows: MessageValues[], ts: string): Promise<{ ids: number[]; session?: SessionRow } | null> {
    return this.locked(() => {
      if (this.st(`update "runs" set "status" = 'running', "started_at" = ? where "id" = ? and "status" = 'queued'`).run(ts, runId).changes !== 1) return null;
      const session = (
        rows.length
          ? this.st(`update "sessions" set "status" = 'running', "message_count" = "message_count" + ?, "bytes" = "bytes" + ?, "last_activity_at" = ? where "key" = ? returning *`).get(rows.length, bytesOf(rows), ts, key)
          : this.st(`update "sessions" set "status" = 'running' where "key" = ? returning *`).get(key)
      ) as SessionRow | undefined;
      const ids = this.insertMessages(rows);
      return session ? { ids, session } : { ids };
    }, true);
  }

  /** Rows of one session and the usage rows that go with them; the session's counters. */
  append(key: string, rows: MessageValues[], usage: UsageValues[], ts: string): Promise<number[]> {
    return this.locked(() => {
      this.insertUsage(usage);
      const ids = this.insertMessages(rows);
      this.st(`update "sessions" set "message_count" = "message_count" + ?, "bytes" = "bytes" + ?, "last_activity_at" = ? where "key" = ?`).run(rows.length, bytesOf(rows), ts, key);
      return ids;
    }, true);
  }

  /**
   * A run's end with its usage, last rows, the session's state (idle or running) and its events; the rows' ids and
   * the events' log ids. With `fold`, when the events are the run's whole log its deltas are folded in the same
   * transaction (`folded`: nothing is left to fold later; readers never see the unfolded rows).
   */
  finishRun(o: HotFinish, ts: string): Promise<{ ids: number[]; events: PendingEvent[]; eventIds: Array<{ id: number }>; folded: boolean }> {
    return this.locked(
      () => {
      const cols = setCols(o.fields);
      if (cols.length) this.st(`update "runs" set ${cols.map((c) => `${q(c)} = ?`).join(', ')} where "id" = ?`).run(...(cols.map((c) => (o.fields as Record<string, unknown>)[c]) as Params), o.runId);
      this.insertUsage(o.usage);
      const ids = this.insertMessages(o.rows);
      const status = o.idle ? 'idle' : 'running';
      if (o.rows.length) this.st(`update "sessions" set "message_count" = "message_count" + ?, "bytes" = "bytes" + ?, "last_activity_at" = ?, "status" = ? where "key" = ?`).run(o.rows.length, bytesOf(o.rows), ts, status, o.key);
      else this.st(`update "sessions" set "status" = ? where "key" = ?`).run(status, o.key);
      const events = o.events(ids);
      const b = o.fold?.before;
      // Its whole log written here: written folded (no rows written to be rewritten and deleted).
      const plan = o.fold && !b?.events.length ? foldPlan(o.runId, events) : null;
      if (plan && plan.group[events.length - 1] === null) return { ids, events, eventIds: this.insertFolded(events, plan), folded: true };
      const eventIds = this.insertEvents(events);
      const whole = o.fold ? wholeRunLog(o.runId, b ? b.events.concat(events) : events, b ? b.ids.concat(eventIds) : eventIds) : null;
      if (whole) this.fold(o.runId, whole);
      return { ids, events, eventIds, folded: !!whole };
      },
      true,
      (r) => o.logged?.(r.events, r.eventIds),
    );
  }

  /** A run's folds, its whole log in hand (what `foldRun` does after reading it back). */
  private fold(runId: string, whole: Parameters<typeof foldSteps>[0]): void {
    for (const f of foldSteps(whole)) {
      this.st('update "events" set "data" = ?, "fold_id" = ? where "id" = ?').run(f.data, f.last.id, f.first);
      this.st('delete from "events" where "run_id" = ? and "id" in (select "value" from json_each(?))').run(runId, JSON.stringify(f.rest));
    }
  }

  /**
   * A run's events with their folds planned (`foldPlan`; the last event in none): each gets the next id of the log
   * (AUTOINCREMENT: above every id ever used, so the ids a fold stands for are never used again once the last event,
   * stored, has the greatest), a fold's first event is stored as the folded row, the others it stands for are not.
   */
  private insertFolded(events: PendingEvent[], plan: PlannedFold): Array<{ id: number }> {
    const base = Number((this.st(`select max(coalesce((select "seq" from "sqlite_sequence" where "name" = 'events'), 0), coalesce((select max("id") from "events"), 0)) as "n"`).get() as { n: number | bigint }).n);
    const ids = events.map((_, i) => ({ id: base + 1 + i }));
    const folds = new Map<number, { data: string[]; last: number }>();
    plan.group.forEach((g, i) => {
      if (g === null) return;
      const f = folds.get(g) ?? { data: [], last: 0 };
      f.data.push(`[${ids[i]!.id - ids[g]!.id},${plan.tail[i]}]`);
      f.last = ids[i]!.id;
      folds.set(g, f);
    });
    const kept = events.flatMap((e, i) => (plan.group[i] === null || plan.group[i] === i ? [i] : []));
    for (let c = 0; c < kept.length; c += EVENT_CHUNK) {
      const chunk = kept.slice(c, c + EVENT_CHUNK);

      const params = chunk.flatMap((i) => {
        const e = events[i]!;
        const f = folds.get(i);
        return [ids[i]!.id, e.runId, e.seq, e.stream, e.ts, e.sessionKey, f ? `[${f.data.join(',')}]` : JSON.stringify(e.data), f ? f.last : null];
      });
      this.st(insertRows('events', FOLDED_COLS, chunk.length)).run(params);
    }
    return ids;
  }

  /** Events in chunks of one multi-row statement each (a statement's ids rise in its rows' order). */
  private insertEvents(events: PendingEvent[]): Array<{ id: number }> {
    const out: Array<{ id: number }> = [];
    for (let i = 0; i < events.length; i += EVENT_CHUNK) {
      const n = Math.min(EVENT_CHUNK, events.length - i);
      const params: Params = new Array(n * 6);
      for (let j = 0, k = 0; j < n; j++) {
        const e = events[i + j]!;
        params[k++] = e.runId;
        params[k++] = e.seq;
        params[k++] = e.stream;
        params[k++] = e.ts;
        params[k++] = e.sessionKey;
        params[k++] = JSON.stringify(e.data);
      }
      const rows = this.st(insertRows('events', EVENT_COLS, n, ' returning "id"')).all(params) as Array<{ id: number | bigint }>;
      const ids = rows.map((r) => Number(r.id)).sort((a, b) => a - b);
      for (const id of ids) out.push({ id });
    }
    return out;
  }

  private insertMessages(rows: MessageValues[]): number[] {
    if (!rows.length) return [];
    const ins = this.st(insertRows('messages', MESSAGE_COLS, 1));
    return rows.map((r) => Number(ins.run(MESSAGE_COLS.map((c) => r[c]) as Params).lastInsertRowid));
  }

  private insertUsage(usage: UsageValues[]): void {
    if (!usage.length) return;
    const ins = this.st(insertRows('model_usage', USAGE_COLS, 1));
    for (const u of usage) ins.run(USAGE_COLS.map((c) => u[c] ?? null) as Params);
  }
}

const bytesOf = (rows: MessageValues[]) => rows.reduce((n, r) => n + rowBytes(r), 0);
