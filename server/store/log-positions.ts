// Positions in the event log: its newest settled row, the settled horizon (PostgreSQL), and a cursor past its end.
import { type Kysely, sql } from 'kysely';
import { type EventCursor, START } from '../events/cursor';
import type { Database, DialectName } from './schema';
import { SETTLED_XID } from './settled';

/** The newest settled position of the log (PostgreSQL: below SETTLED_XID; SQLite: its greatest id). */
export async function logHead(db: Kysely<Database>, dialect: DialectName): Promise<EventCursor> {
  if (dialect !== 'postgres') {
    const r = await db.selectFrom('events').select((eb) => eb.fn.max('id').as('m')).executeTakeFirst();
    return { id: Number(r?.m ?? 0) };
  }
  const r = await sql<{ tx: string; id: number }>`
    select tx::text as tx, id from events where tx < ${SETTLED_XID} order by tx desc, id desc limit 1`.execute(db);
  const row = r.rows[0];
  return row ? { tx: BigInt(row.tx), id: Number(row.id) } : START;
}

/** A position every settled row is at or before (PostgreSQL): just below SETTLED_XID. */
export async function settledHorizon(db: Kysely<Database>): Promise<EventCursor> {
  const r = await sql<{ xmin: string }>`select ${SETTLED_XID}::text as xmin`.execute(db);
  return { tx: BigInt(r.rows[0]!.xmin) - 1n, id: Number.MAX_SAFE_INTEGER };
}

/** Whether a cursor lies past the end of the log: an id above every event's, or on PostgreSQL a transaction not begun yet. */
export async function cursorBeyondLog(db: Kysely<Database>, dialect: DialectName, c: EventCursor): Promise<boolean> {
  if (dialect !== 'postgres') return c.id > (await logHead(db, dialect)).id;
  const r = await sql<{ m: string | null; xmax: string }>`
    select (select max(id) from events)::text as m, pg_snapshot_xmax(pg_current_snapshot())::text as xmax`.execute(db);
  const row = r.rows[0]!;
  return c.id > Number(row.m ?? 0) || (c.tx !== undefined && c.tx >= BigInt(row.xmax));
}
