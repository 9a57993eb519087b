// tRPC approvals router: pending approvals, resolving one (from the room's row or its Approvals dialog), and the record.
import { z } from 'zod';
import { approvalsHistoryParams, approvalsListParams, approvalsResolveParams } from '../../gateway/schemas';
import { createTRPCRouter, protectedProcedure } from '../init';

/** Where in the room the person decided: the approval row under the transcript (`room`) or the Approvals dialog (`inbox`). */
const resolveInput = approvalsResolveParams.extend({ via: z.enum(['room', 'inbox']).optional() });

export const approvalsRouter = createTRPCRouter({
  list: protectedProcedure.input(approvalsListParams).query(({ ctx, input }) => ctx.gateway.approvalsList(input)),
  resolve: protectedProcedure.input(resolveInput).mutation(({ ctx, input: { via, ...p } }) => ctx.gateway.approvalsResolve(p, { type: 'user', id: via ?? 'room' })),
  history: protectedProcedure.input(approvalsHistoryParams).query(({ ctx, input }) => ctx.gateway.approvalsHistory(input)),
});
