// tRPC events router: a session's agent events as an SSE subscription, resumable by event id (tracked + lastEventId).
import { tracked } from '@trpc/server';
import { z } from 'zod';
import { parseEventCursor } from '../../events/cursor';
import { sessionKeySchema } from '../../gateway/schemas';
import { createTRPCRouter, protectedProcedure, toTRPCError } from '../init';

const onEventInput = z
  .object({
    sessionKey: sessionKeySchema,
    // Set by httpSubscriptionLink on reconnect: the id of the last event the client saw.
    lastEventId: z.string().regex(/^\d{1,20}(-\d{1,15})?$/).nullish(),
    // Without lastEventId: start at the session's run in flight (replayed from its first event), so a room opened or
    // reloaded mid-run shows that run's text so far; live when none is in flight.
    fromActiveRun: z.boolean().optional(),
  })
  .strict();

export const eventsRouter = createTRPCRouter({
  onEvent: protectedProcedure.input(onEventInput).subscription(async function* ({ ctx, input, signal }) {
    const after = input.lastEventId ? (parseEventCursor(input.lastEventId) ?? undefined) : input.fromActiveRun ? await ctx.gateway.activeRunStart(input.sessionKey) : undefined;
    try {
      // The gateway subscribes before replaying id > afterId, so nothing falls between replay and live.
      for await (const ev of ctx.gateway.events({ sessionKey: input.sessionKey, after, signal })) {
        const { cursor, ...event } = ev;
        yield tracked(cursor ?? String(ev.id), event);
      }
    } catch (e) {
      if (signal?.aborted) return;
      throw toTRPCError(e);
    }
  }),
});
