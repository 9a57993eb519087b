// The PostgreSQL statement part that logs events: a batch travels as ONE jsonb parameter (a record set `x`), is
// inserted in its order (ids rise with it) and returns the ids and transaction ids the event cursor needs. Every
// PostgreSQL event write (the event flush, a run's end, a transaction's events) builds its insert here.
import { type RawBuilder, sql } from 'kysely';
import type { PendingEvent } from '../events/types';

/**
 * `insert into events … select … from jsonb_to_recordset(…) as x(o, r, s, st, ts, k, d, m, e)`: `x.o` is the
 * event's index, `x.m` the index of the transcript row it carries (`messageOf`, -1: none), `x.e` its epoch.
 * `join`, `where` and `data` (the stored data, from `x.d`) adapt it; it returns `id, tx` unless told otherwise.
 */
export function insertEventsSql(
  events: PendingEvent[],
  o: { messageOf?: number[]; join?: RawBuilder<unknown>; where?: RawBuilder<unknown>; data?: RawBuilder<unknown>; returning?: RawBuilder<unknown> } = {},
): RawBuilder<unknown> {
  const records = events.map((e, i) => ({
    o: i,
    r: e.runId,
    s: e.seq,
    st: e.stream,
    ts: e.ts,
    k: e.sessionKey,
    d: JSON.stringify(e.data),
    m: o.messageOf && o.messageOf[i]! >= 0 ? o.messageOf[i] : null,
    e: e.epoch ?? null,
  }));
  return sql`insert into events (run_id, seq, stream, ts, session_key, data)
      select x.r, x.s, x.st, x.ts, x.k, ${o.data ?? sql`x.d`}
      from jsonb_to_recordset(${JSON.stringify(records)}::jsonb) as x(o int, r text, s int, st text, ts text, k text, d text, m int, e int)${o.join ?? sql``}
      ${o.where ? sql`where ${o.where}` : sql``}
      order by x.o
      returning ${o.returning ?? sql`id, tx::text as tx`}`;
}

/** The cluster's wake-up for event readers (identical notifications of one transaction are delivered once). */
export const wakeEventsSql = (channel: string) => sql`pg_notify(${channel}, '{"kind":"events"}')`;
