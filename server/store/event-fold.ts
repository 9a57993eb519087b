// Folding an ended run's text deltas (issue 24 item 7) and reading the event log through folds. A run of consecutive
// `assistant` deltas is stored as ONE row at the first delta's place (its id, and on PostgreSQL its tx) whose `data`
// lists every delta's id, tx, time and text, and whose `fold_id`/`fold_tx` are the last delta's place. Every read of
// the log goes through `readEventsAfter`, which expands it: clients see the same events, ids, cursors and bytes as
// before the fold. The fold is one transaction (a reader sees all the rows or the folded one, never a mix).
import { type Kysely, sql } from 'kysely';
import { type EventCursor, isAfter } from '../events/cursor';
import type { Selectable } from 'kysely';
import type { Database, DialectName, EventsTable } from './schema';
import { SETTLED_XID } from './settled';

/** An event's columns as stored and as read (the table's, less its id and fold columns; `tx` as text on PostgreSQL). */
type EventFields = Omit<Selectable<EventsTable>, 'id' | 'tx' | 'fold_id' | 'fold_tx'> & { tx?: string };

/** One event of the log as its readers get it: never folded, with its place (the SSE id). */
export interface LogRow extends EventFields {
  id: number;
  cursor: EventCursor;
}

/** A stored row as read (PostgreSQL adds tx and xmin as text). */
export interface StoredRow extends EventFields {
  id: number | string;
  fold_id: number | string | null;
  fold_tx?: string | null;
  xmin?: string;
  b?: number | string;
  /** A row built from an event in hand (`wholeRunLog`) whose data is a plain delta: its text (`data` is left empty). */
  delta?: string;
}

/**
 * One folded delta: its id less the row's, its time (ms after the row's, or the exact string when that would not
 * give it back), its text, and on PostgreSQL its tx less the row's when not 0.
 */
type Entry = [dId: number, dTs: number | string, text: string, dTx?: number];

/** At most this many deltas in one folded row (a reader expands a row whole). */
export const FOLD_MAX = 500;

const COLS = sql`id, run_id, seq, stream, ts, session_key, data, fold_id`;

/** The events a stored row stands for, in log order: itself, or every delta it folds. */
export function expandRow(r: StoredRow): LogRow[] {
  const id = Number(r.id);
  const tx = r.tx === undefined || r.tx === null ? undefined : BigInt(r.tx);
  const place = (eid: number, etx: bigint | undefined): EventCursor => (etx === undefined ? { id: eid } : { id: eid, tx: etx });
  const txField = (etx: bigint | undefined) => (etx === undefined ? {} : { tx: String(etx) });
  if (r.fold_id === null || r.fold_id === undefined) {
    return [{ id, run_id: r.run_id, seq: r.seq, stream: r.stream, ts: r.ts, session_key: r.session_key, data: r.data, ...txField(tx), cursor: place(id, tx) }];
  }
  const entries = JSON.parse(r.data) as Entry[];
  const t0 = Date.parse(r.ts);
  const exact = isExactTime(r.ts, t0);
  return entries.map(([dId, dTs, text, dTx], i) => {
    const eid = id + dId;
    const etx = tx === undefined ? undefined : tx + BigInt(dTx ?? 0);
    const ts = typeof dTs === 'string' ? dTs : dTs === 0 ? r.ts : timeAfter(r.ts, t0, exact, dTs);
    return { id: eid, run_id: r.run_id, seq: r.seq + i, stream: r.stream, ts, session_key: r.session_key, data: JSON.stringify({ delta: text }), ...txField(etx), cursor: place(eid, etx) };
  });
}

const byPlace = (a: LogRow, b: LogRow) => (isAfter(a.cursor, b.cursor) ? 1 : isAfter(b.cursor, a.cursor) ? -1 : 0);

/** A page of the log: `pending` when a row not settled yet cut it short, `cut` that row's place. */
export interface LogPage {
  rows: LogRow[];
  pending: boolean;
  cut?: EventCursor;
}

/**
 * Events after a cursor (PostgreSQL: a resolved one), in log order, folds expanded. One statement reads the next
 * `limit` stored rows after it and the folded rows that began at or before it and end after it (one snapshot: a
 * fold committing meanwhile is seen whole or not at all). When the page is full, only events up to its last
 * stored row's place are returned (the rest of a fold that reaches past it comes with the next page). On
 * PostgreSQL only events of settled transactions (below SETTLED_XID, server/store/settled.ts) are returned; `pending` says more may
 * come. A full page returns at least `limit` events unless `pending`.
 */
export async function readEventsAfter(
  db: Kysely<Database>,
  dialect: DialectName,
  o: { after: EventCursor; sessionKey?: string; runId?: string; limit: number },
): Promise<LogPage> {
  const filters = sql`${o.sessionKey ? sql`and session_key = ${o.sessionKey}` : sql``} ${o.runId ? sql`and run_id = ${o.runId}` : sql``}`;
  let stored: StoredRow[];
  if (dialect !== 'postgres') {
    const a = o.after.id;
    stored = (
      await sql<StoredRow>`
      select * from (select ${COLS}, 0 as b from events where id > ${a} ${filters} order by id limit ${o.limit})
      union all
      select ${COLS}, 1 as b from events where fold_id is not null and fold_id > ${a} and id <= ${a} ${filters}`.execute(db)
    ).rows;
  } else {
    const tx = String(o.after.tx ?? 0n);
    const a = o.after.id;
    stored = (
      await sql<StoredRow>`
      (select ${COLS}, tx::text as tx, 0 as b, ${SETTLED_XID}::text as xmin from events
        where (tx, id) > (${tx}::xid8, ${a}) ${filters} order by tx, id limit ${o.limit})
      union all
      (select ${COLS}, tx::text as tx, 1 as b, ${SETTLED_XID}::text as xmin from events
        where fold_id is not null and (fold_tx, fold_id) > (${tx}::xid8, ${a}) and (tx, id) <= (${tx}::xid8, ${a}) ${filters})`.execute(db)
    ).rows;
  }
  // A full page: its last stored row's place (a UNION ALL keeps no order).
  const main = stored.filter((r) => Number(r.b) === 0).map((r) => expandRow(r)[0]!.cursor);
  const until = main.length >= o.limit ? main.reduce((m, c) => (isAfter(c, m) ? c : m)) : null;
  const events = stored
    .flatMap(expandRow)
    .filter((e) => isAfter(e.cursor, o.after) && (!until || !isAfter(e.cursor, until)))
    .sort(byPlace);
  if (dialect !== 'postgres' || !stored.length) return { rows: events, pending: false };
  const xmin = BigInt(stored[0]!.xmin!);
  const out: LogRow[] = [];
  for (const e of events) {
    // An older transaction may still commit rows before this one: wait for the horizon.
    if (e.cursor.tx! >= xmin) return { rows: out, pending: true, cut: e.cursor };
    out.push(e);
  }
  return { rows: out, pending: false };
}

/**
 * PostgreSQL, a plain event id (an older client's Last-Event-ID): the place of the event with the greatest id up to
 * it, folded deltas included (one statement: the stored rows and the folds that reach it).
 */
export async function resolvePlainId(db: Kysely<Database>, id: number): Promise<EventCursor | null> {
  const r = await sql<StoredRow>`
    (select ${COLS}, tx::text as tx from events where id <= ${id} order by id desc limit 1)
    union all
    (select ${COLS}, tx::text as tx from events where fold_id is not null and fold_id >= ${id} and id <= ${id})
    union all
    (select ${COLS}, tx::text as tx from events where fold_id is not null and fold_id < ${id} order by fold_id desc limit 1)`.execute(db);
  let best: LogRow | null = null;
  for (const e of r.rows.flatMap(expandRow)) if (e.id <= id && (!best || e.id > best.id)) best = e;
  return best ? best.cursor : null;
}

/** `ts`'s time as an offset from `t0` when the offset gives `ts` back exactly as the string it is, else `ts` itself. */
function exactOffset(ts: string, t0: number): number | string {
  const off = Date.parse(ts) - t0;
  return off !== 0 && Number.isSafeInteger(off) && new Date(t0 + off).toISOString() === ts ? off : ts;
}

/** A time shaped as `toISOString` writes it, with minutes and seconds in range. */
const CANONICAL_TS = /^\d{4}-\d{2}-\d{2}T\d{2}:[0-5]\d:[0-5]\d\.\d{3}Z$/;
const digit = (s: string, i: number) => s.charCodeAt(i) - 48;
/** Milliseconds into its hour of a CANONICAL_TS time. */
const msInHour = (ts: string) => ((digit(ts, 14) * 10 + digit(ts, 15)) * 60 + digit(ts, 17) * 10 + digit(ts, 18)) * 1000 + digit(ts, 20) * 100 + digit(ts, 21) * 10 + digit(ts, 22);

/**
 * Whether `ts` is exactly what `toISOString` writes for `t0` (its Date.parse): then times in its hour are worked out
 * from their minutes, seconds and milliseconds. Checked once per folded row, not per delta (a `T24:00` or a 30 February
 * parses, to another day, and is not such a time).
 */
const isExactTime = (ts: string, t0: number) => ts.length === 24 && !Number.isNaN(t0) && new Date(t0).toISOString() === ts;

/**
 * `exactOffset` without a Date for the common case, times written by the server in the same hour as the row's first
 * (`exactFirst`: `isExactTime` of it): the offset is the difference of their minutes, seconds and milliseconds, and it
 * gives the string back. Undefined when that does not hold. A delta's Date.parse, new Date and toISOString were a third
 * of a run's fold (`bench/fold-timing.ts`).
 */
function sameHourOffset(first: string, exactFirst: boolean, ts: string): number | undefined {
  if (!exactFirst || ts.length !== 24 || !ts.startsWith(first.slice(0, 14)) || !CANONICAL_TS.test(ts)) return undefined;
  const off = msInHour(ts) - msInHour(first);
  return off === 0 ? undefined : off;
}

/**
 * The time `dTs` ms after a folded row's first time `ts` (`t0` parsed, `exact`: `isExactTime`), as `toISOString`
 * writes it: by hand within the hour.
 */
function timeAfter(ts: string, t0: number, exact: boolean, dTs: number): string {
  const ms = exact ? msInHour(ts) + dTs : -1;
  if (ms >= 0 && ms < 3_600_000) {
    const m = Math.floor(ms / 60_000);
    const sec = Math.floor((ms % 60_000) / 1000);
    const milli = ms % 1000;
    return `${ts.slice(0, 14)}${m < 10 ? '0' : ''}${m}:${sec < 10 ? '0' : ''}${sec}.${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
  }
  return new Date(t0 + dTs).toISOString();
}

/** A row that may fold: its delta's text (its `data` is exactly `{"delta":…}` as JSON writes it) and its place. */
type Foldable = { row: StoredRow; text: string; place: EventCursor };

/**
 * The ended run's deltas to fold: maximal runs (≥ 2, ≤ FOLD_MAX) of consecutive plain deltas, in log order. Each row
 * is parsed and placed once (50 runs of 60 deltas ending together took 17 ms here, in one task, when every check
 * parsed again: BENCHMARKS.md 'Stop 42').
 */
function foldGroups(rows: StoredRow[]): Foldable[][] {
  let maxSeq = -Infinity;
  for (let i = 0; i < rows.length; i++) if (rows[i]!.seq > maxSeq) maxSeq = rows[i]!.seq;
  const foldable = (r: StoredRow): Foldable | null => {
    if (r.stream !== 'assistant' || r.fold_id !== null || r.seq === maxSeq) return null;
    let text = r.delta;
    if (text === undefined) {
      // A stored row: foldable when its data is exactly `{"delta":…}` as JSON writes it.
      try {
        const d = JSON.parse(r.data) as { delta?: unknown };
        if (typeof d.delta !== 'string' || r.data !== JSON.stringify({ delta: d.delta })) return null;
        text = d.delta;
      } catch {
        return null;
      }
    }
    // The place an unfolded row's expansion gives it (`expandRow`), without building the event.
    return { row: r, text, place: r.tx === undefined || r.tx === null ? { id: Number(r.id) } : { id: Number(r.id), tx: BigInt(r.tx) } };
  };
  const groups: Foldable[][] = [];
  let cur: Foldable[] = [];
  const close = () => {
    if (cur.length >= 2) groups.push(cur);
    cur = [];
  };
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    const f = foldable(r);
    const prev = cur[cur.length - 1];
    // Consecutive: the next seq, a later place in the log, a greater id (the offsets stay positive).
    if (prev && (!f || r.seq !== prev.row.seq + 1 || Number(r.id) <= Number(prev.row.id) || !isAfter(f.place, prev.place) || cur.length >= FOLD_MAX)) close();
    if (f) cur.push(f);
    else close();
  }
  close();
  return groups;
}

/** A delta's entry in the folded row that begins with `first` (`t0`: the first's time, parsed; `exact`: `isExactTime`). */
function entryOf(f: Foldable, first: StoredRow, t0: number, exact: boolean): Entry {
  const r = f.row;
  const dTs: number | string = r.ts === first.ts ? 0 : (sameHourOffset(first.ts, exact, r.ts) ?? exactOffset(r.ts, t0));
  const e: Entry = [Number(r.id) - Number(first.id), dTs, f.text];
  const dTx = first.tx === undefined ? 0 : Number(BigInt(r.tx!) - BigInt(first.tx));
  if (dTx) e.push(dTx);
  return e;
}

/** Each delta's entry in the group's folded row. */
function entries(group: Foldable[]): Entry[] {
  const first = group[0]!.row;
  const t0 = Date.parse(first.ts);
  const exact = isExactTime(first.ts, t0);
  return group.map((f) => entryOf(f, first, t0, exact));
}

/** A run's folds planned before its events are written (`foldPlan`), by the events' indexes. */
export interface PlannedFold {
  /** The index of the first event of the event's fold, or null: stored as it is. */
  group: Array<number | null>;
  /** A folded event's entry without its id offset, as JSON (`dTs,"text"`): the writer puts `[offset,` before it and `]` after. */
  tail: Array<string | null>;
}

/**
 * The folds of a run's events before they are written, when they are its whole log (`wholeRunLog`) and are written
 * in ONE statement, so that their ids rise in their order and they share one transaction (all `foldGroups` asks of
 * their places): the writer stores each fold's first event as the folded row and leaves the others out. Null when
 * nothing folds.
 */
export function foldPlan(runId: string, events: Parameters<typeof wholeRunLog>[1]): PlannedFold | null {
  const whole = wholeRunLog(runId, events, events.map((_, i) => ({ id: i + 1 })));
  const groups = whole ? foldGroups(whole) : [];
  if (!groups.length) return null;
  const plan: PlannedFold = { group: events.map(() => null), tail: events.map(() => null) };
  for (const g of groups) {
    const es = entries(g);
    g.forEach((f, k) => {
      const i = Number(f.row.id) - 1;
      plan.group[i] = Number(g[0]!.row.id) - 1;
      plan.tail[i] = JSON.stringify(es[k]!.slice(1)).slice(1, -1);
    });
  }
  return plan;
}

/** One fold: the group's first row becomes the folded row (`data`, ending at `last`), the `rest` are deleted. */
export interface FoldStep {
  first: number;
  last: { id: number; tx?: string };
  data: string;
  rest: number[];
}

/** The folds of a run's whole log (its stored rows, in seq order). */
export function foldSteps(rows: StoredRow[]): FoldStep[] {
  return foldGroups(rows).map((g) => {
    const last = g[g.length - 1]!.row;
    return { first: Number(g[0]!.row.id), last: { id: Number(last.id), ...(last.tx === undefined ? {} : { tx: last.tx }) }, data: JSON.stringify(entries(g)), rest: g.slice(1).map((f) => Number(f.row.id)) };
  });
}

/**
 * A run's events as just written with its end, as its stored rows — only when they are its WHOLE log (seqs 1 to n,
 * nothing of it written before): then its folds are known without reading the log back. Else null. For `foldSteps`
 * and `foldPlan` only: a plain delta's row has its text in `delta` and an empty `data`.
 */
export function wholeRunLog(runId: string, events: Array<{ runId: string; seq: number; stream: string; ts: string; sessionKey: string; data: unknown }>, ids: Array<{ id: number; tx?: string }>): StoredRow[] | null {
  const rows: StoredRow[] = [];
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.runId !== runId) continue;
    const w = ids[i];
    if (!w || e.seq !== rows.length + 1) return null;
    // A plain delta's row needs no `data`: its fold reads `delta` (what JSON.parse of its data would give).
    const delta = e.stream === 'assistant' ? plainDelta(e.data) : undefined;
    const row: StoredRow = { id: w.id, run_id: e.runId, seq: e.seq, stream: e.stream, ts: e.ts, session_key: e.sessionKey, data: delta === undefined ? JSON.stringify(e.data) : '', fold_id: null };
    if (delta !== undefined) row.delta = delta;
    if (w.tx !== undefined) row.tx = w.tx;
    rows.push(row);
  }
  return rows.length ? rows : null;
}

/**
 * The text of an event's data when it is surely one JSON writes as exactly `{"delta":…}`: a plain object whose only
 * enumerable key with a value is `delta`, a string (every delta the runs emit). Undefined when not sure: then the
 * row's data is written and `foldGroups` tests it as it tests a stored row.
 */
function plainDelta(d: unknown): string | undefined {
  if (!d || typeof d !== 'object' || Object.getPrototypeOf(d) !== Object.prototype) return undefined;
  const o = d as Record<string, unknown>;
  let has = false;
  for (const k in o) {
    if (k === 'delta') has = true;
    else if (o[k] !== undefined) return undefined;
  }
  return has && typeof o.delta === 'string' ? o.delta : undefined;
}

/**
 * Folds an ended run's text deltas, in one transaction: each group's first row becomes the folded row, the others
 * are deleted. Does nothing for a run already folded (locked on PostgreSQL: a second fold waits, then sees it).
 * Returns the number of rows deleted. Call it only after the run's end is committed (nothing more of its deltas comes).
 */
export async function foldRun(db: Kysely<Database>, dialect: DialectName, runId: string): Promise<number> {
  return db.transaction().execute(async (t) => {
    const rows = (
      dialect === 'postgres'
        ? await sql<StoredRow>`select ${COLS}, tx::text as tx from events where run_id = ${runId} order by seq, id for update`.execute(t)
        : await sql<StoredRow>`select ${COLS} from events where run_id = ${runId} order by seq, id`.execute(t)
    ).rows.map((r) => ({ ...r, seq: Number(r.seq), fold_id: r.fold_id === null ? null : Number(r.fold_id) }));
    if (!rows.length || rows.some((r) => r.fold_id !== null)) return 0;
    let deleted = 0;
    for (const f of foldSteps(rows)) {
      if (dialect === 'postgres') {
        await sql`update events set data = ${f.data}, fold_id = ${f.last.id}, fold_tx = ${f.last.tx!}::xid8 where id = ${f.first}`.execute(t);
      } else {
        await sql`update events set data = ${f.data}, fold_id = ${f.last.id} where id = ${f.first}`.execute(t);
      }
      const res = await t.deleteFrom('events').where('run_id', '=', runId).where('id', 'in', f.rest).executeTakeFirst();
      deleted += Number(res.numDeletedRows);
    }
    return deleted;
  });
}

/**
 * PostgreSQL: the folds of a run whose whole log was written with its end (`wholeRunLog`), ONE statement each, no
 * read back and no transaction: the folded row is written only while it and every row it folds are still there
 * unfolded, and the rest are deleted only when it was (a second fold, or a log deleted meanwhile, changes nothing).
 */
export async function foldWrittenPg(db: Kysely<Database>, runId: string, steps: FoldStep[]): Promise<number> {
  let deleted = 0;
  for (const f of steps) {
    const r = await sql<{ n: number }>`
      with u as (update events set data = ${f.data}, fold_id = ${f.last.id}, fold_tx = ${f.last.tx!}::xid8
                 where id = ${f.first} and run_id = ${runId} and fold_id is null
                   and (select count(*) from events where run_id = ${runId} and id = any(${f.rest}::bigint[]) and fold_id is null) = ${f.rest.length}
                 returning id),
      d as (delete from events where run_id = ${runId} and id = any(${f.rest}::bigint[]) and exists (select 1 from u) returning id)
      select (select count(*) from d)::int as n`.execute(db);
    deleted += Number(r.rows[0]?.n ?? 0);
  }
  return deleted;
}

/** Just before a run's first event (undefined before it wrote one): where a replay of the whole run starts. */
export async function runStartCursor(db: Kysely<Database>, dialect: DialectName, runId: string): Promise<EventCursor | undefined> {
  if (dialect !== 'postgres') {
    const r = await db.selectFrom('events').select((eb) => eb.fn.min('id').as('m')).where('run_id', '=', runId).executeTakeFirst();
    return r?.m == null ? undefined : { id: Number(r.m) - 1 };
  }
  const r = await sql<{ tx: string; id: number }>`select tx::text as tx, id from events where run_id = ${runId} order by tx, id limit 1`.execute(db);
  const first = r.rows[0];
  return first ? { tx: BigInt(first.tx), id: Number(first.id) - 1 } : undefined;
}
