// Which tools are messaging tools (seed 004): used by the final-reply rules, metrics and the UI.
const CORE_MESSAGING_TOOLS = new Set(['sessions_send', 'agents_message', 'send_message', 'message']);

/** Channel plugins register their send actions here (e.g. `slack_send`). */
const channelSendActions = new Set<string>();

export function registerChannelSendAction(toolName: string): void {
  channelSendActions.add(toolName);
}

export function isMessagingTool(toolName: string): boolean {
  return CORE_MESSAGING_TOOLS.has(toolName) || channelSendActions.has(toolName);
}

export function messagingToolNames(): string[] {
  return [...CORE_MESSAGING_TOOLS, ...channelSendActions];
}

/** Normalises text for the "not posted twice" rule. */
export const deliveredKey = (text: string) => text.trim().replace(/\s+/g, ' ');

/** Tools whose calls in one step must run one after another, in call order: what they post is seen in that order. */
export function postsInOrder(toolName: string): boolean {
  return toolName === 'send_message' || toolName === 'message' || channelSendActions.has(toolName);
}
