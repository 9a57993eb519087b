// tRPC status router: the status panel's figures and the webhook outbox (operator views).
import { z } from 'zod';
import { runsBoardParams, webhooksListParams } from '../../gateway/schemas';
import { createTRPCRouter, protectedProcedure } from '../init';

export const statusRouter = createTRPCRouter({
  get: protectedProcedure.input(z.object({}).strict().optional()).query(({ ctx }) => ctx.gateway.status()),
  board: protectedProcedure.input(runsBoardParams).query(({ ctx, input }) => ctx.gateway.runsBoard(input)),
  webhooks: protectedProcedure.input(webhooksListParams).query(({ ctx, input }) => ctx.gateway.webhooksList(input)),
});
