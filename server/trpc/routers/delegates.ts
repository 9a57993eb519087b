// tRPC delegates router: a parent session's delegate sessions (list, preview, resume, dismiss) and the pool's stats.
import { z } from 'zod';
import {
  delegatesDismissParams,
  delegatesListParams,
  delegatesMessagesParams,
  delegatesResumeParams,
  delegatesStatsParams,
} from '../../gateway/schemas';
import { createTRPCRouter, protectedProcedure } from '../init';

// tRPC infinite queries send `direction` next to `cursor`; the gateway schemas are strict, so accept it here and drop it.
const direction = { direction: z.enum(['forward', 'backward']).optional() };

export const delegatesRouter = createTRPCRouter({
  list: protectedProcedure
    .input(delegatesListParams.extend(direction))
    .query(({ ctx, input: { direction: _d, ...params } }) => ctx.gateway.delegatesList(params)),
  messages: protectedProcedure
    .input(delegatesMessagesParams.extend(direction))
    .query(({ ctx, input: { direction: _d, ...params } }) => ctx.gateway.delegatesMessages(params)),
  resume: protectedProcedure.input(delegatesResumeParams).mutation(({ ctx, input }) => ctx.gateway.delegatesResume(input)),
  dismiss: protectedProcedure.input(delegatesDismissParams).mutation(({ ctx, input }) => ctx.gateway.delegatesDismiss(input)),
  stats: protectedProcedure.input(delegatesStatsParams.optional()).query(({ ctx }) => ctx.gateway.delegatesStats()),
});
