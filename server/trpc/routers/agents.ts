// tRPC agents router: the configured agents.
import { agentsListParams } from '../../gateway/schemas';
import { createTRPCRouter, protectedProcedure } from '../init';

export const agentsRouter = createTRPCRouter({
  list: protectedProcedure.input(agentsListParams.optional()).query(({ ctx }) => ctx.gateway.agentsList()),
});
