// tRPC approvals router: pending approvals, resolving one (from the room's row or its Approvals dialog), and the record.
import { z } from 'zod';
import { approvalsHistoryParams, approvalsListParams, approvalsResolveParams } from '../../gateway/schemas';
import { createTRPCRouter, protectedProcedure } from '../init';

/** Where in the room the person decided: the approval row under the transcript (`room`) or the Approvals dialog (`inbox`). */
const resolveInput = approvalsResolveParams.extend({ via: z.enum(['room', 'inbox']).optional() });
// tRPC infinite queries send `direction` next to `cursor`; the gateway schema is strict, so accept it here and drop it.
const historyInput = approvalsHistoryParams.extend({ direction: z.enum(['forward', 'backward']).optional() });

export const approvalsRouter = createTRPCRouter({
  // The room asks per session for its toolbox (that session's calls) or for every session (the inbox).
  list: protectedProcedure.input(approvalsListParams).query(({ ctx, input }) => ctx.gateway.approvalsList(input, { own: true })),
  resolve: protectedProcedure.input(resolveInput).mutation(({ ctx, input: { via, ...p } }) => ctx.gateway.approvalsResolve(p, { type: 'user', id: via ?? 'room' })),
  history: protectedProcedure.input(historyInput).query(({ ctx, input: { direction: _direction, ...p } }) => ctx.gateway.approvalsHistory(p)),
});
