// Server-only tRPC access for server components: a per-request query client and an options proxy over the router.
// (Import from server components only: it pulls in the runtime.)
import { getRuntime } from '@/server/runtime';
import { createTRPCContext } from '@/server/trpc/init';
import { appRouter } from '@/server/trpc/root';
import { dehydrate, HydrationBoundary } from '@tanstack/react-query';
import { createTRPCOptionsProxy } from '@trpc/tanstack-react-query';
import type { ReactNode } from 'react';
import { cache } from 'react';
import { getQueryClient } from './query-client';

/** One query client per server request (React `cache` scopes it to the render). */
export const getServerQueryClient = cache(getQueryClient);

/** tRPC options for prefetching in a server component, called directly (no HTTP) with the request's auth. */
export async function createServerTRPC(headers: Headers) {
  const ctx = createTRPCContext({ headers, navigation: true, runtime: await getRuntime() }); // the room's server render: a page load
  return createTRPCOptionsProxy({ ctx, router: appRouter, queryClient: getServerQueryClient });
}

/** Hands what the server prefetched to the browser's query cache. */
export function HydrateClient({ children }: { children: ReactNode }) {
  return <HydrationBoundary state={dehydrate(getServerQueryClient())}>{children}</HydrationBoundary>;
}
