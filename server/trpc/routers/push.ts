// tRPC push router: the room's Notifications button (VAPID key, subscribe, unsubscribe; CONTRACT §3 `push.*`).
import { pushSubscribeParams, pushUnsubscribeParams, pushVapidKeyParams } from '../../push/schemas';
import { createTRPCRouter, protectedProcedure } from '../init';

export const pushRouter = createTRPCRouter({
  vapidKey: protectedProcedure.input(pushVapidKeyParams.optional()).query(({ ctx }) => ctx.gateway.pushVapidKey()),
  subscribe: protectedProcedure.input(pushSubscribeParams).mutation(({ ctx, input }) => ctx.gateway.pushSubscribe(input)),
  unsubscribe: protectedProcedure.input(pushUnsubscribeParams).mutation(({ ctx, input }) => ctx.gateway.pushUnsubscribe(input)),
});
