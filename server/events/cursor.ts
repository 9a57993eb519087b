// Event-log cursors: the SSE id. SQLite (one writer) orders the log by id; PostgreSQL by (transaction id, id),
// because ids from a sequence commit out of order across processes. Opaque to clients, any process accepts it.

export interface EventCursor {
  id: number;
  /** PostgreSQL: the writing transaction's xid8. Absent on SQLite, or for a plain id given by a client. */
  tx?: bigint;
}

export const START: EventCursor = { id: 0, tx: 0n };

export function encodeEventCursor(c: EventCursor): string {
  return c.tx === undefined ? String(c.id) : `${c.tx}-${c.id}`;
}

/** A cursor from a client: `<id>` or `<tx>-<id>`; null when it is neither. */
export function parseEventCursor(s: string): EventCursor | null {
  if (/^\d{1,15}$/.test(s)) return { id: Number(s) };
  const m = /^(\d{1,20})-(\d{1,15})$/.exec(s);
  if (!m) return null;
  return { tx: BigInt(m[1]!), id: Number(m[2]) };
}

/** a > b in log order (both of one kind: resolved cursors on PostgreSQL, ids on SQLite). */
export function isAfter(a: EventCursor, b: EventCursor): boolean {
  if (a.tx !== undefined && b.tx !== undefined && a.tx !== b.tx) return a.tx > b.tx;
  return a.id > b.id;
}
