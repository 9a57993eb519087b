// tRPC pairings router: the room's list of channel senders waiting for pairing, and approve / deny.
import { pairingsResolveParams } from '../../trust/pairing';
import { agentsListParams } from '../../gateway/schemas';
import { createTRPCRouter, protectedProcedure } from '../init';

export const pairingsRouter = createTRPCRouter({
  list: protectedProcedure.input(agentsListParams.optional()).query(({ ctx }) => ctx.gateway.pairingsList()),
  resolve: protectedProcedure.input(pairingsResolveParams).mutation(({ ctx, input }) => ctx.gateway.pairingsResolve(input)),
});
