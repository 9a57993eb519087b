// The tRPC HTTP endpoint (queries, batched mutations and SSE subscriptions) — a thin adapter over server/trpc.
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { limitTrpcRequest, TRPC_MAX_BATCH } from '@/server/http/trpc-limits';
import { createTRPCContext } from '@/server/trpc/init';
import { appRouter } from '@/server/trpc/root';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

async function handler(incoming: Request): Promise<Response> {
  const req = await limitTrpcRequest(incoming);
  if (req instanceof Response) return req;
  return fetchRequestHandler({
    endpoint: '/api/trpc',
    req,
    router: appRouter,
    maxBatchSize: TRPC_MAX_BATCH,
    createContext: () => createTRPCContext({ headers: req.headers, method: req.method }),
    onError({ error, path }) {
      if (error.code === 'INTERNAL_SERVER_ERROR') console.error(`tRPC ${path ?? '?'} failed:`, error.cause ?? error);
    },
  });
}

export { handler as GET, handler as POST };
