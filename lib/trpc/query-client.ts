// The TanStack Query client factory: one per browser tab, a fresh one per server render.
import { isServer, QueryClient } from '@tanstack/react-query';

function makeQueryClient(server: boolean): QueryClient {
  return new QueryClient({
    defaultOptions: {
      // Live data arrives through the event subscription, so polling-style refetches are unnecessary.
      // The server render's prefetches never retry: a failure (a session with no row yet) is left to the browser's own
      // fetch, and a retry would hold the page's first byte for its delay (1 s) — every first visit to a new session.
      queries: { staleTime: 30_000, refetchOnWindowFocus: false, retry: server ? false : 1 },
    },
  });
}

let browserQueryClient: QueryClient | undefined;

export function getQueryClient(): QueryClient {
  if (isServer) return makeQueryClient(true);
  browserQueryClient ??= makeQueryClient(false);
  return browserQueryClient;
}
