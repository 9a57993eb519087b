// tRPC chat router: start a run (`agent`), wait for one, and page the transcript (`chat.history`).
import { agentParams, agentWaitParams, chatHistoryParams } from '../../gateway/schemas';
import { createTRPCRouter, protectedProcedure } from '../init';

export const chatRouter = createTRPCRouter({
  agent: protectedProcedure.input(agentParams).mutation(({ ctx, input }) => ctx.gateway.agent(input)),
  agentWait: protectedProcedure.input(agentWaitParams).mutation(({ ctx, input }) => ctx.gateway.agentWait(input)),
  history: protectedProcedure.input(chatHistoryParams).query(({ ctx, input }) => ctx.gateway.chatHistory(input)),
});
