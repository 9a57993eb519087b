// tRPC sessions router: list (paged by cursor), get, patch, delete — thin wrappers over the gateway service.
import { z } from 'zod';
import { sessionKeySchema, sessionsCompactParams, sessionsDeleteParams, sessionsListParams, sessionsPatchParams, sessionsSearchParams, sessionsUsageParams } from '../../gateway/schemas';
import { createTRPCRouter, protectedProcedure } from '../init';

// tRPC infinite queries send `direction` next to `cursor`; the gateway schema is strict, so accept it here and drop it.
const listInput = sessionsListParams.extend({ direction: z.enum(['forward', 'backward']).optional() });

export const sessionsRouter = createTRPCRouter({
  list: protectedProcedure
    .input(listInput)
    .query(({ ctx, input: { direction: _direction, ...params } }) => ctx.gateway.sessionsList(params, { attention: true })),
  get: protectedProcedure
    .input(z.object({ sessionKey: sessionKeySchema }).strict())
    .query(({ ctx, input }) => ctx.gateway.sessionsGet(input.sessionKey)),
  patch: protectedProcedure.input(sessionsPatchParams).mutation(({ ctx, input }) => ctx.gateway.sessionsPatch(input)),
  search: protectedProcedure
    .input(sessionsSearchParams.extend({ direction: z.enum(['forward', 'backward']).optional() }))
    .query(({ ctx, input: { direction: _direction, ...params } }) => ctx.gateway.sessionsSearch(params)),
  delete: protectedProcedure.input(sessionsDeleteParams).mutation(({ ctx, input }) => ctx.gateway.sessionsDelete(input)),
  usage: protectedProcedure.input(sessionsUsageParams).query(({ ctx, input }) => ctx.gateway.sessionsUsage(input)),
  compact: protectedProcedure.input(sessionsCompactParams).mutation(({ ctx, input }) => ctx.gateway.sessionsCompact(input)),
});
