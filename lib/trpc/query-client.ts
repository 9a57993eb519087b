// The TanStack Query client factory: one per browser tab, a fresh one per server render.
import { isServer, QueryClient } from '@tanstack/react-query';
import { errorCode } from './types';

/**
 * The browser's retry rule: an answer of the server (a §6 code) is retried once; a request that got no answer (the
 * server restarting, the network gone: no code) is retried with TanStack's backoff (1, 2, 4, 8, 16, 30 s), so a room
 * loaded while the server was away fills in once it is back instead of keeping "Could not load…" on screen.
 */
export const browserRetry = (count: number, err: unknown) => (errorCode(err) !== undefined ? count < 1 : count < 6);

function makeQueryClient(server: boolean): QueryClient {
  return new QueryClient({
    defaultOptions: {
      // Live data arrives through the event subscription, so polling-style refetches are unnecessary.
      // The server render's prefetches never retry: a failure (a session with no row yet) is left to the browser's own
      // fetch, and a retry would hold the page's first byte for its delay (1 s) — every first visit to a new session.
      queries: { staleTime: 30_000, refetchOnWindowFocus: false, retry: server ? false : browserRetry },
    },
  });
}

let browserQueryClient: QueryClient | undefined;

export function getQueryClient(): QueryClient {
  if (isServer) return makeQueryClient(true);
  browserQueryClient ??= makeQueryClient(false);
  return browserQueryClient;
}
