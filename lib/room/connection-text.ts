// What a user reads about a failed call or a dropped live stream: plain sentences, never a transport's raw text.

/** An expired or missing login cookie (the server answers UNAUTHORIZED): the banner adds a sign-in link to it. */
export const SIGNED_OUT = 'Signed out: sign in again.';
/** The stream dropped and no server answers (killed, restarting, network gone, silent for too long). */
export const SERVER_AWAY = 'The server is not answering; trying again…';
/** The stream stopped for good and no server answered. */
export const SERVER_GONE = 'The server is not answering.';

/** Said of a call that failed because no server answered ("Failed to fetch", "Unknown error", "network error"). */
const NO_ANSWER = 'the server is not answering';

/** How a tRPC client error came about: the login is gone, the server refused with its own words, or nobody answered. */
export type ErrorKind = { kind: 'signed-out' } | { kind: 'refused'; message: string } | { kind: 'unreachable' };

interface ClientErrorLike {
  message?: unknown;
  data?: { code?: unknown; httpStatus?: unknown } | null;
  shape?: { code?: unknown } | null;
  meta?: { response?: { status?: unknown } | null } | null;
}

/**
 * Only the server's answer carries an error shape (`data`, `shape`): a TRPCClientError made from an EventSource's
 * error event ("Unknown error"), a fetch's TypeError ("Failed to fetch") or the client's inactivity timeout has none,
 * and its text means nothing to a user. UNAUTHORIZED is spotted by its domain code (init.ts errorFormatter), tRPC's
 * own code key, its JSON-RPC code or the HTTP status.
 */
export function errorKind(error: unknown): ErrorKind {
  if (!error || typeof error !== 'object') return { kind: 'unreachable' };
  const e = error as ClientErrorLike;
  const status = e.data?.httpStatus ?? e.meta?.response?.status;
  if (status === 401 || e.data?.code === 'unauthorized' || e.data?.code === 'UNAUTHORIZED' || e.shape?.code === -32001) return { kind: 'signed-out' };
  const message = typeof e.message === 'string' ? e.message.trim() : '';
  if ((e.data != null || e.shape != null) && message) return { kind: 'refused', message };
  return { kind: 'unreachable' };
}

/** A failed call's text for a line such as "Not sent: …": the server's own message, or a plain sentence. */
export function errorText(error: unknown): string {
  const k = errorKind(error);
  return k.kind === 'signed-out' ? SIGNED_OUT : k.kind === 'refused' ? k.message : NO_ANSWER;
}

/** The banner's sentence for the live stream: while it tries again ('connecting', 'reconnecting') or after it gave up. */
export function connectionText(state: 'connecting' | 'reconnecting' | 'error', error: unknown): string {
  const k = errorKind(error);
  if (k.kind === 'signed-out') return SIGNED_OUT;
  const retrying = state !== 'error';
  if (k.kind === 'refused') return retrying ? `The server answered with an error (${k.message}); trying again…` : `The server refused live updates: ${k.message}`;
  return retrying ? SERVER_AWAY : SERVER_GONE;
}
