// tRPC deliveries router (CONTRACT §3, §9): a delivery, the list, and Retry of a dead one; thin over the gateway service.
import { deliveriesGetParams, deliveriesListParams, deliveriesRetryParams } from '../../gateway/schemas';
import { createTRPCRouter, protectedProcedure } from '../init';

export const deliveriesRouter = createTRPCRouter({
  get: protectedProcedure.input(deliveriesGetParams).query(({ ctx, input }) => ctx.gateway.deliveriesGet(input)),
  list: protectedProcedure.input(deliveriesListParams).query(({ ctx, input }) => ctx.gateway.deliveriesList(input)),
  retry: protectedProcedure.input(deliveriesRetryParams).mutation(({ ctx, input }) => ctx.gateway.deliveriesRetry(input)),
});
