// Which PostgreSQL errors mean "the connection (or the server) went away" rather than "the statement failed": a
// run meeting one is not over (it is re-driven once the database answers again), unlike a run whose write failed.

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
