// tRPC sessions router: list, get, patch, delete — thin wrappers over the gateway service.
import { z } from 'zod';
import { sessionKeySchema, sessionsDeleteParams, sessionsListParams, sessionsPatchParams } from '../../gateway/schemas';
import { createTRPCRouter, protectedProcedure } from '../init';

export const sessionsRouter = createTRPCRouter({
  list: protectedProcedure.input(sessionsListParams).query(({ ctx, input }) => ctx.gateway.sessionsList(input)),
  get: protectedProcedure
    .input(z.object({ sessionKey: sessionKeySchema }).strict())
    .query(({ ctx, input }) => ctx.gateway.sessionsGet(input.sessionKey)),
  patch: protectedProcedure.input(sessionsPatchParams).mutation(({ ctx, input }) => ctx.gateway.sessionsPatch(input)),
  delete: protectedProcedure.input(sessionsDeleteParams).mutation(({ ctx, input }) => ctx.gateway.sessionsDelete(input)),
});
