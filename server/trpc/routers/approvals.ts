// tRPC approvals router: pending approvals for a session and resolving one.
import { approvalsListParams, approvalsResolveParams } from '../../gateway/schemas';
import { createTRPCRouter, protectedProcedure } from '../init';

export const approvalsRouter = createTRPCRouter({
  list: protectedProcedure.input(approvalsListParams).query(({ ctx, input }) => ctx.gateway.approvalsList(input)),
  resolve: protectedProcedure.input(approvalsResolveParams).mutation(({ ctx, input }) => ctx.gateway.approvalsResolve(input)),
});
