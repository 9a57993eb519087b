// Which tools are messaging tools (seed 004): flagged on `tool` events for the UI, counted in metrics, and the
// ones whose posts count for the final-reply rule. The `message` tool is the channels' send action.
import { channelOriginOf } from '../channels/reply-router';

const MESSAGING_TOOLS = new Set(['sessions_send', 'agents_message', 'send_message', 'message']);

export function isMessagingTool(toolName: string): boolean {
  return MESSAGING_TOOLS.has(toolName);
}

/** Normalises text for the "not posted twice" rule. */
export const deliveredKey = (text: string) => text.trim().replace(/\s+/g, ' ');

/** A peer or chat id as written in a `to` (`user:peer`, `channel:C1`, `peer`), for comparing. */
const bareTarget = (to: string) => to.trim().toLowerCase().replace(/^[a-z]+:/, '');

/**
 * The texts this step's calls send into the run's own conversation, before its text is posted: `send_message`'s, and a
 * `message` send to the channel and peer the run answers (a run started by a chat message). The step's own text is
 * then not posted as well (it was delivered to the chat by the router before the call ran, so it went out twice).
 */
export function sentThisStep(calls: Array<{ toolName: string; input: unknown }>, origin: unknown): Set<string> {
  const chat = channelOriginOf(origin);
  const out = new Set<string>();
  for (const c of calls) {
    const i = (c.input ?? {}) as { content?: unknown; action?: unknown; channel?: unknown; to?: unknown; text?: unknown; threadId?: unknown };
    if (c.toolName === 'send_message') out.add(deliveredKey(String(i.content ?? '')));
    else if (c.toolName === 'message' && chat && i.action === 'send' && typeof i.text === 'string' && typeof i.channel === 'string' && typeof i.to === 'string')
      if (i.channel.toLowerCase() === chat.id.toLowerCase() && bareTarget(i.to) === bareTarget(chat.to) && (i.threadId ?? chat.threadId) === chat.threadId) out.add(deliveredKey(i.text));
  }
  return out;
}

/** Tools whose calls in one step run one after another, in call order: what they post is seen in that order. */
export function postsInOrder(toolName: string): boolean {
  return toolName === 'send_message' || toolName === 'message';
}
