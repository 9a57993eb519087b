// send_message (seed 003): the agent posts to its current session's stream, as its persona, 0..N times per run.
import { z } from 'zod';
import type { EventBus } from '../events/bus';
import { toolError } from '../errors';
import { MAX_MESSAGE_BYTES } from '../gateway/schemas';
import type { Metrics } from '../metrics';
import { appendTranscript } from '../orchestrator/transcript';
import type { Store } from '../store/store';
import { deliveredKey } from './messaging';
import type { ToolDef } from './types';
import { described, toolText } from './describe';

const input = described(z.object({ content: toolText(MAX_MESSAGE_BYTES) }), {
  content: 'The message text to post to the current conversation (Markdown; up to 256 KiB).',
});

export function createSendMessageTool(deps: { store: Store; bus: EventBus; metrics: Metrics }): ToolDef<z.infer<typeof input>> {
  return {
    name: 'send_message',
    description:
      'Send a message to the current conversation, as your persona. Use it when you want to respond; you may call it several times (partial results, then more) or not at all (silence is fine). At most a few calls per run.',
    inputSchema: input,
    async execute({ content }, ctx) {
      if (typeof content !== 'string') return toolError('invalid_request', 'content must be a string');
      if (!content.trim()) return toolError('invalid_request', 'content must not be empty');
      if (Buffer.byteLength(content, 'utf8') > MAX_MESSAGE_BYTES) return toolError('invalid_request', 'content is larger than 256 KiB');
      const limit = ctx.agent.limits.sendMessagePerRun;
      const used = ctx.counters.get('send_message') ?? 0;
      if (used >= limit) {
        deps.metrics.rateLimited.inc({ tool: 'send_message' });
        return toolError('rate_limited', `send_message is limited to ${limit} calls per run`);
      }
      ctx.counters.set('send_message', used + 1);
      if (!(await deps.store.getSession(ctx.sessionKey))) return toolError('unknown_session', `session ${ctx.sessionKey} no longer exists`);
      const [row] = await appendTranscript(
        deps.store,
        deps.bus,
        [
          {
            sessionKey: ctx.sessionKey,
            role: 'assistant',
            kind: 'message',
            content,
            runId: ctx.runId,
            author: { type: 'persona', id: ctx.agent.id, name: ctx.agent.persona },
            meta: { via: 'send_message' },
          },
        ],
        ctx.runId,
      );
      ctx.counters.set('posted', (ctx.counters.get('posted') ?? 0) + 1);
      ctx.delivered.add(deliveredKey(content));
      return { messageId: String(row!.id), status: 'sent' };
    },
  };
}
