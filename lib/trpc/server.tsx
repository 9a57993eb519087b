// Server-only tRPC access for server components: a per-request query client and an options proxy over the room's API.
// Under `npm start` pages render in a worker thread of their own (scripts/pages-worker.mjs) and ask the gateway's
// thread for their reads by message; elsewhere (`next dev`, tests) the router is called in-process. (Import from
// server components only.)
import { dehydrate, HydrationBoundary } from '@tanstack/react-query';
import { createTRPCClient, TRPCClientError, type TRPCLink } from '@trpc/client';
import { observable } from '@trpc/server/observable';
import { createTRPCOptionsProxy } from '@trpc/tanstack-react-query';
import type { ReactNode } from 'react';
import { cache } from 'react';
import type { AppRouter } from '@/server/trpc/root';
import { inTurns } from '@/lib/room/in-turns';
import { getQueryClient } from './query-client';

/** What the pages' worker is handed by its process (scripts/pages.mjs): no runtime, the gateway's queries by message. */
export interface PagesHost {
  token: string;
  defaultAgentId: string;
  /** A query of the room's API (`chat.history`, …), answered by the gateway's thread (runtime.roomQuery). */
  query(path: string, input: unknown): Promise<unknown>;
}

const PAGES = Symbol.for('crosstalk.pages');

/** The pages' worker's host, when this render runs in one. */
export const pagesHost = (): PagesHost | undefined => (globalThis as { [PAGES]?: PagesHost })[PAGES];

/** What a page needs of the gateway: its token (to check the visitor's) and the default agent. */
export async function roomHost(): Promise<{ token: string; defaultAgentId: string }> {
  const host = pagesHost();
  if (host) return host;
  const runtime = await (await import('@/server/runtime')).getRuntime();
  return { token: runtime.token, defaultAgentId: runtime.config.defaultAgentId };
}

/** A tRPC link that hands each query to the pages' host (queries only: a page render reads). */
function messageLink(host: PagesHost): TRPCLink<AppRouter> {
  return () =>
    ({ op }) =>
      observable((observer) => {
        host.query(op.path, op.input).then(
          (data) => {
            observer.next({ result: { type: 'data', data } });
            observer.complete();
          },
          (e: unknown) => observer.error(TRPCClientError.from(e instanceof Error ? e : new Error(String(e)))),
        );
      });
}

/** One query client per server request (React `cache` scopes it to the render). */
export const getServerQueryClient = cache(getQueryClient);

/** tRPC options for prefetching in a server component, for a visitor the page has authorized. */
export async function createServerTRPC(headers: Headers) {
  const host = pagesHost();
  if (host) {
    // The worker checked the visitor's cookie against the token. One message per query: each is a task of its own on
    // the gateway's loop, with no HTTP on either side.
    const client = createTRPCClient<AppRouter>({ links: [messageLink(host)] });
    return createTRPCOptionsProxy<AppRouter>({ client, queryClient: getServerQueryClient });
  }
  const [{ getRuntime }, { createTRPCContext }, { appRouter }] = await Promise.all([import('@/server/runtime'), import('@/server/trpc/init'), import('@/server/trpc/root')]);
  const ctx = createTRPCContext({ headers, navigation: true, runtime: await getRuntime() }); // the room's server render: a page load
  return createTRPCOptionsProxy({ ctx, router: appRouter, queryClient: getServerQueryClient });
}

/**
 * Runs a page's reads. In the pages' worker all at once: each is a message, a task of its own on the gateway's thread.
 * In the gateway's own process (`next dev`) each in a task of its own, and the render after them in another: the runs
 * streaming meanwhile get the loop between the pieces of the page's server work (one 15–35 ms task before).
 */
export async function prefetchAll(reads: ReadonlyArray<() => unknown>): Promise<void> {
  if (pagesHost()) await Promise.all(reads.map((read) => read()));
  else await inTurns(reads);
}

/** Hands what the server prefetched to the browser's query cache. */
export function HydrateClient({ children }: { children: ReactNode }) {
  return <HydrationBoundary state={dehydrate(getServerQueryClient())}>{children}</HydrationBoundary>;
}
