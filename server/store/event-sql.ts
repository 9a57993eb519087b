// The PostgreSQL statement part that logs events: a batch travels as ONE jsonb parameter (a record set `x`), is
// inserted in its order (ids rise with it) and returns the ids and transaction ids the event cursor needs. Every
// PostgreSQL event write (the event flush, a run's end, a transaction's events) builds its insert here.
import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { PendingEvent } from '../events/types';
import type { Database } from './schema';
import { wellFormedJson } from './pg-json';

/** One event as a record of the `x` record set: its index, run, seq, stream, time, session, data and row index. */
export function eventRecord(e: PendingEvent, i: number, messageOf?: number[]) {
  return { o: i, r: e.runId, s: e.seq, st: e.stream, ts: e.ts, k: e.sessionKey, d: wellFormedJson(e.data), m: messageOf && messageOf[i]! >= 0 ? messageOf[i] : null };
}

/**
 * `insert into events … select … from jsonb_to_recordset(…) as x(o, r, s, st, ts, k, d, m, e)`: `x.o` is the
 * event's index, `x.m` the index of the transcript row it carries (`messageOf`, -1: none), `x.e` its epoch.
 * `join`, `where` and `data` (the stored data, from `x.d`) adapt it; it returns `id, tx` unless told otherwise.
 */
export function insertEventsSql(
  events: PendingEvent[],
  o: { messageOf?: number[]; join?: RawBuilder<unknown>; where?: RawBuilder<unknown>; data?: RawBuilder<unknown>; returning?: RawBuilder<unknown> } = {},
): RawBuilder<unknown> {
  const records = events.map((e, i) => ({ ...eventRecord(e, i, o.messageOf), e: e.epoch ?? null }));
  return sql`insert into events (run_id, seq, stream, ts, session_key, data)
      select x.r, x.s, x.st, x.ts, x.k, ${o.data ?? sql`x.d`}
      from jsonb_to_recordset(${wellFormedJson(records)}::jsonb) as x(o int, r text, s int, st text, ts text, k text, d text, m int, e int)${o.join ?? sql``}
      ${o.where ? sql`where ${o.where}` : sql``}
      order by x.o
      returning ${o.returning ?? sql`id, tx::text as tx`}`;
}

/** The cluster's wake-up for event readers (identical notifications of one transaction are delivered once). */
export const wakeEventsSql = (channel: string) => sql`pg_notify(${channel}, '{"kind":"events"}')`;

/**
 * A batch written again after its first attempt was cut off by a lost connection, which may have committed before
 * the connection dropped (the reply was lost, not the COMMIT): the events already in the log, by (run_id, seq), are
 * not written twice but handed back with their ids; `write` writes the others. Only a retry pays for the lookup.
 * This process alone writes a run's seqs (under its lease), and a backend ended by the server (a restart,
 * pg_terminate_backend) has committed or rolls back; not covered: a COMMIT still in flight on a server that is up
 * when only the socket broke, and that lands after the retry's lookup (a duplicate row then, never a gap).
 */
export async function writeSkippingLogged(
  db: Kysely<Database>,
  events: PendingEvent[],
  write: (rest: PendingEvent[]) => Promise<Array<{ id: number; tx?: string } | null>>,
): Promise<Array<{ id: number; tx?: string } | null>> {
  const keys = JSON.stringify(events.map((e) => ({ r: e.runId, s: e.seq })));
  const have = await sql<{ id: number | string; tx: string; run_id: string; seq: number }>`
    select e.id, e.tx::text as tx, e.run_id, e.seq from events e
    join jsonb_to_recordset(${keys}::jsonb) as k(r text, s int) on e.run_id = k.r and e.seq = k.s`.execute(db);
  const logged = new Map(have.rows.map((r) => [`${r.run_id}\u0000${r.seq}`, { id: Number(r.id), tx: r.tx }]));
  if (!logged.size) return write(events);
  const key = (e: PendingEvent) => `${e.runId}\u0000${e.seq}`;
  const written = await write(events.filter((e) => !logged.has(key(e))));
  let j = 0;
  return events.map((e) => logged.get(key(e)) ?? written[j++] ?? null);
}
