// message: send text to a channel target; delivered over the channel and mirrored into the target's session (never the sender's).
import { z } from 'zod';
import type { ChannelService } from '../channels';
import { channelOriginOf } from '../channels/reply-router';
import { errorMessage, isCrosstalkError, toolError } from '../errors';
import { agentIdOf } from '../sessions/keys';
import { deliveredKey } from './messaging';
import { derivedId } from '../orchestrator/queue';
import type { ToolDef } from './types';
import { described, toolText } from './describe';
import { MAX_MESSAGE_BYTES } from '../gateway/schemas';

const id = z.union([z.string().trim().min(1).max(256), z.number().int()]).transform(String);

const input = described(
  z
    .object({
      action: z.literal('send'),
      channel: z.string().trim().min(1).max(64),
      to: z.string().trim().min(1).max(512),
      text: toolText(MAX_MESSAGE_BYTES),
      threadId: id.optional(),
      replyTo: id.optional(),
      accountId: z.string().trim().min(1).max(128).optional(),
    })
    .strict(),
  {
    action: 'Always "send".',
    channel: 'The channel id: slack, discord, telegram, matrix, msteams, mattermost, bluebubbles, nextcloud-talk, zalo, zalouser, nostr, tlon, voice, webhook or webchat.',
    to: 'The recipient on that channel: a user, chat or channel id as the channel names it.',
    text: 'The message text (up to 256 KiB).',
    threadId: 'Post into this thread or topic of the conversation.',
    replyTo: 'Reply to this message id.',
    accountId: 'Which of several configured accounts of the channel sends it.',
  },
);

/** The per-run counter the outbound budget (`limits.outboundPerRun`) is kept in. */
export const OUTBOUND_COUNTER = 'outbound';

/** `channels` may be a getter: the runtime builds the channel service after the tools (it needs the orchestrator). */
export function createMessageTool(channelsOrGetter: ChannelService | (() => ChannelService)): ToolDef<z.output<typeof input>> {
  const svc = () => (typeof channelsOrGetter === 'function' ? channelsOrGetter() : channelsOrGetter);
  return {
    name: 'message',
    description:
      'Send a message to a person or conversation on a channel (slack, discord, telegram, matrix, msteams, mattermost, bluebubbles, ' +
      'nextcloud-talk, zalo, zalouser, nostr, tlon, voice, webhook, webchat). {action: "send", channel, to, text, threadId?, replyTo?, accountId?}. ' +
      'The text is recorded in that conversation\'s session. Returns {status: "ok", messageId, sessionKey}.',
    inputSchema: input as unknown as z.ZodType<z.output<typeof input>>,
    async execute(a, ctx) {
      // The agent is the one whose session is calling: its id is in the key (CONTRACT §4).
      const agentId = agentIdOf(ctx.sessionKey) ?? ctx.agent.id;
      const limit = ctx.agent.limits.outboundPerRun;
      const used = ctx.counters.get(OUTBOUND_COUNTER) ?? 0;
      if (used >= limit) return toolError('rate_limited', `outbound limit reached: ${limit} channel messages per run`);
      let threadId = a.threadId;
      try {
        const channels = svc();
        const { target } = channels.resolveRoute({ agentId, channel: a.channel, to: a.to, threadId, replyTo: a.replyTo, accountId: a.accountId });
        // Slack: a send to the channel this run is answering in a thread stays in that thread (ids compared case-insensitively).
        const origin = channelOriginOf(ctx.origin);
        if (!threadId && !a.replyTo && target.peer.kind !== 'direct' && origin?.id === 'slack' && a.channel.toLowerCase() === 'slack' && origin.threadId && origin.to.toLowerCase() === target.to.toLowerCase()) {
          threadId = origin.threadId;
        }
        ctx.counters.set(OUTBOUND_COUNTER, used + 1);
        const r = await channels.sendFromAgent({
          agentId,
          channel: a.channel,
          to: a.to,
          text: a.text,
          threadId,
          replyTo: a.replyTo,
          accountId: a.accountId,
          runId: ctx.runId,
          sourceSessionKey: ctx.sessionKey,
          signal: ctx.signal,
          ...(ctx.callId ? { deliveryId: `dlv_${derivedId(ctx.runId, ctx.callId)}`, callId: ctx.callId } : {}),
        });
        // Sent into the run's own conversation: the final reply rule must not post the same text again.
        if (r.sessionKey === ctx.sessionKey) ctx.delivered?.add(deliveredKey(a.text));
        return { status: 'ok', messageId: r.messageId, sessionKey: r.sessionKey, channel: r.channel, to: r.to, ...(r.threadId ? { threadId: r.threadId } : {}), ...(r.deliveryId ? { deliveryId: r.deliveryId } : {}) };
      } catch (e) {
        // A failed send's record, when it was made (dead or failed, and retryable: CONTRACT §9 `message` → `deliveryId`).
        if (isCrosstalkError(e)) return { ...toolError(e.code, e.message), ...(e.deliveryId ? { deliveryId: e.deliveryId } : {}) };
        return toolError('internal', `message failed: ${errorMessage(e)}`);
      }
    },
  };
}
