'use client';
// The browser tRPC client: batched HTTP for queries/mutations, SSE for subscriptions, bound to TanStack Query.
import type { AppRouter } from '@/server/trpc/root';
import { QueryClientProvider } from '@tanstack/react-query';
import { createTRPCClient, httpBatchLink, httpLink, httpSubscriptionLink, splitLink } from '@trpc/client';
import { createTRPCContext } from '@trpc/tanstack-react-query';
import { useState, type ReactNode } from 'react';
import { getQueryClient } from './query-client';

export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();

const ENDPOINT = '/api/trpc';
const UNBATCHED = new Set(['chat.history', 'status.board']);

function makeTRPCClient() {
  return createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => op.type === 'subscription',
        // Same origin: the login cookie rides along on both fetch and EventSource.
        true: httpSubscriptionLink({ url: ENDPOINT }),
        // A transcript page and the agent board go on their own, at once: a session switch or the board's opening shows
        // them as soon as they are here, without waiting for the batch's tick or for slower calls batched with them.
        false: splitLink({
          condition: (op) => op.type === 'query' && UNBATCHED.has(op.path),
          true: httpLink({ url: ENDPOINT }),
          false: httpBatchLink({ url: ENDPOINT, maxItems: 20 }), // the server's TRPC_MAX_BATCH
        }),
      }),
    ],
  });
}

export function TRPCReactProvider({ children }: { children: ReactNode }) {
  const queryClient = getQueryClient();
  const [trpcClient] = useState(makeTRPCClient);
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </QueryClientProvider>
  );
}
