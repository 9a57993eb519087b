// Which tools are messaging tools (seed 004): flagged on `tool` events for the UI, counted in metrics, and the
// ones whose posts count for the final-reply rule. The `message` tool is the channels' send action.
const MESSAGING_TOOLS = new Set(['sessions_send', 'agents_message', 'send_message', 'message']);

export function isMessagingTool(toolName: string): boolean {
  return MESSAGING_TOOLS.has(toolName);
}

/** Normalises text for the "not posted twice" rule. */
export const deliveredKey = (text: string) => text.trim().replace(/\s+/g, ' ');

/** Tools whose calls in one step run one after another, in call order: what they post is seen in that order. */
export function postsInOrder(toolName: string): boolean {
  return toolName === 'send_message' || toolName === 'message';
}
