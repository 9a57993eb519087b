// tRPC deliveries router (CONTRACT §3, §9): a delivery, the list, and Retry of a dead one; thin over the gateway service.
import { z } from 'zod';
import { deliveriesGetParams, deliveriesListParams, deliveriesRetryParams } from '../../gateway/schemas';
import { createTRPCRouter, protectedProcedure } from '../init';

export const deliveriesRouter = createTRPCRouter({
  get: protectedProcedure.input(deliveriesGetParams).query(({ ctx, input }) => ctx.gateway.deliveriesGet(input)),
  list: protectedProcedure.input(deliveriesListParams).query(({ ctx, input }) => ctx.gateway.deliveriesList(input)),
  /** The room's tool card: the deliveries one tool call started (a batch has several), found by the call. */
  forCall: protectedProcedure
    .input(z.object({ runId: z.string().min(1).max(256), callId: z.string().min(1).max(256) }).strict())
    .query(({ ctx, input }) => ctx.gateway.deliveriesForCall(input)),
  retry: protectedProcedure.input(deliveriesRetryParams).mutation(({ ctx, input }) => ctx.gateway.deliveriesRetry(input)),
});
