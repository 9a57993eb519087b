// tRPC events router: a session's agent events as an SSE subscription, resumable by event id (tracked + lastEventId).
import { tracked } from '@trpc/server';
import { z } from 'zod';
import { sessionKeySchema } from '../../gateway/schemas';
import { createTRPCRouter, protectedProcedure, toTRPCError } from '../init';

const onEventInput = z
  .object({
    sessionKey: sessionKeySchema,
    // Set by httpSubscriptionLink on reconnect: the id of the last event the client saw.
    lastEventId: z.string().regex(/^\d+$/).nullish(),
  })
  .strict();

export const eventsRouter = createTRPCRouter({
  onEvent: protectedProcedure.input(onEventInput).subscription(async function* ({ ctx, input, signal }) {
    const afterId = input.lastEventId ? Number(input.lastEventId) : undefined;
    try {
      // The gateway subscribes before replaying id > afterId, so nothing falls between replay and live.
      for await (const ev of ctx.gateway.events({ sessionKey: input.sessionKey, afterId, signal })) {
        yield tracked(String(ev.id), ev);
      }
    } catch (e) {
      if (signal?.aborted) return;
      throw toTRPCError(e);
    }
  }),
});
