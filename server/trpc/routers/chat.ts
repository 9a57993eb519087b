// tRPC chat router: start a run (`agent`), wait for one, and page the transcript (`chat.history`).
import { z } from 'zod';
import { agentCancelParams, agentParams, agentWaitParams, chatHistoryParams, sessionKeySchema } from '../../gateway/schemas';
import { createTRPCRouter, protectedProcedure } from '../init';

// tRPC infinite queries send `direction` next to `cursor`; the gateway schema is strict, so accept it here and drop it.
const historyInput = chatHistoryParams.extend({ direction: z.enum(['forward', 'backward']).optional() });

export const chatRouter = createTRPCRouter({
  agent: protectedProcedure.input(agentParams).mutation(({ ctx, input }) => ctx.gateway.agent(input)),
  agentWait: protectedProcedure.input(agentWaitParams).mutation(({ ctx, input }) => ctx.gateway.agentWait(input)),
  activeRuns: protectedProcedure
    .input(z.object({ sessionKey: sessionKeySchema }).strict())
    .query(({ ctx, input }) => ctx.gateway.sessionActiveRuns(input.sessionKey)),
  agentCancel: protectedProcedure.input(agentCancelParams).mutation(({ ctx, input }) => ctx.gateway.agentCancel(input)),
  history: protectedProcedure
    .input(historyInput)
    .query(({ ctx, input: { direction: _direction, ...params } }) => ctx.gateway.chatHistory(params)),
});
