// The tRPC endpoint (queries, batched mutations and SSE subscriptions) as one fetch-style handler: Next's route
// (app/api/trpc, for `next dev`) and the node:http front of `npm start` (server/http/node-fetch.ts) both call it.
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import type { Runtime } from '../runtime-types';
import { createTRPCContext } from '../trpc/init';
import { appRouter, createCaller } from '../trpc/root';
import { limitTrpcRequest, TRPC_MAX_BATCH } from './trpc-limits';

/** `runtime`: the one to serve (Next's route hands in the process runtime, getRuntime()). */
export async function handleTrpc(incoming: Request, runtime: Runtime): Promise<Response> {
  const req = await limitTrpcRequest(incoming);
  if (req instanceof Response) return req;
  return fetchRequestHandler({
    endpoint: '/api/trpc',
    req,
    router: appRouter,
    maxBatchSize: TRPC_MAX_BATCH,
    createContext: () => createTRPCContext({ headers: req.headers, method: req.method, runtime }),
    onError({ error, path }) {
      if (error.code === 'INTERNAL_SERVER_ERROR') console.error(`tRPC ${path ?? '?'} failed:`, error.cause ?? error);
    },
  });
}

/**
 * One query of the room's API for the pages' worker (scripts/pages.mjs): a page's reads come by message from its own
 * worker thread, which checked the visitor's cookie, instead of over HTTP. The answer is JSON text, as over HTTP.
 */
export async function roomQuery(runtime: Runtime, path: string, input: unknown): Promise<string> {
  const procedure = (appRouter._def.procedures as unknown as Record<string, { _def: { type: string } } | undefined>)[path];
  if (procedure?._def.type !== 'query') throw new Error(`no query ${path}`);
  const caller = createCaller({ runtime, authorized: true }) as unknown as Record<string, Record<string, (input: unknown) => Promise<unknown>>>;
  const [router, name] = path.split('.') as [string, string];
  return JSON.stringify(await caller[router]![name]!(input));
}
