// Which PostgreSQL errors mean "the connection (or the server) went away" rather than "the statement failed": a
// run meeting one is not over (it is re-driven once the database answers again), unlike a run whose write failed;
// and which mean "this statement lost a lock conflict" (a deadlock, a serialization failure): rolled back whole, so
// the same write may simply be made again.

/** SQLSTATEs of a lost server: admin shutdown (a restart, pg_terminate_backend), crash, starting up; class 08. */
const LOST_CODES = new Set(['57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006', '08007']);
const LOST_SOCKET = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTCONN']);
const LOST_TEXT = /Connection terminated|connection error and is not queryable|Client was closed|timeout exceeded when trying to connect|the database system is (starting up|shutting down|in recovery mode)/i;

/** True when `e` (or its cause) says the PostgreSQL connection or server was lost, not that the statement was wrong. */
export function isConnectionLoss(e: unknown): boolean {
  for (let x = e, depth = 0; x && typeof x === 'object' && depth < 4; x = (x as { cause?: unknown }).cause, depth++) {
    const code = (x as { code?: unknown }).code;
    if (typeof code === 'string' && (LOST_CODES.has(code) || LOST_SOCKET.has(code))) return true;
    const message = (x as { message?: unknown }).message;
    if (typeof message === 'string' && LOST_TEXT.test(message)) return true;
  }
  return false;
}

/** SQLSTATEs of a statement (or transaction) rolled back by a lock conflict: deadlock detected, serialization failure. */
const CONFLICT_CODES = new Set(['40P01', '40001']);

/** True when `e` (or its cause) is a deadlock or serialization failure: nothing of it was written; it may be made again. */
export function isConflict(e: unknown): boolean {
  for (let x = e, depth = 0; x && typeof x === 'object' && depth < 4; x = (x as { cause?: unknown }).cause, depth++) {
    const code = (x as { code?: unknown }).code;
    if (typeof code === 'string' && CONFLICT_CODES.has(code)) return true;
  }
  return false;
}

/**
 * A write cut off without being refused: the connection was lost or it lost a lock conflict. A run meeting one is not
 * over (it is re-driven from its last written step), and what it was doing is not a failure to report.
 */
export const isCutOff = (e: unknown): boolean => isConnectionLoss(e) || isConflict(e);

/** How often a write that lost a lock conflict is made again before its error is let through (`retryConflicts`). */
export const CONFLICT_TRIES = 5;

/**
 * Runs a PostgreSQL write that is ONE statement or one whole transaction (rolled back whole by a deadlock or a
 * serialization failure), making it again after such a conflict, a few times with a short random pause.
 */
export async function retryConflicts<T>(write: () => Promise<T>, tries = CONFLICT_TRIES): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await write();
    } catch (e) {
      if (i >= tries || !isConflict(e)) throw e;
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * i));
    }
  }
}

/** True when `e` is PostgreSQL's unique violation (23505) of `constraint`. */
export function isDuplicateKey(e: unknown, constraint: string): boolean {
  const x = e as { code?: unknown; constraint?: unknown } | null;
  return !!x && typeof x === 'object' && x.code === '23505' && x.constraint === constraint;
}
