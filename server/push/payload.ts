// What a push says about a pending item (CONTRACT §7 "Notifications"): the plaintext JSON and its one-line summary.
import type { PendingApproval } from '../events/types';

/** The decrypted body a service worker receives; `token` (tool items only) lets its actions resolve the item once. */
export interface ApprovalPush {
  type: 'approval';
  approvalId: string;
  kind: PendingApproval['kind'];
  sessionKey: string;
  tool: string;
  parentChain: string[];
  summary: string;
  token?: string;
}

const SUMMARY_MAX = 140;

/** One line, at most SUMMARY_MAX characters: enough to decide on a lock screen. */
export function clipLine(s: string, max = SUMMARY_MAX): string {
  const line = s.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** "exec: ls -la" for a command, "tool {json args}" for the rest; what an elicitation, sign-in or budget asks. */
export function summaryOf(item: PendingApproval): string {
  const args = (item.args ?? {}) as Record<string, unknown>;
  switch (item.kind) {
    case 'elicitation':
      return clipLine(`${String(args.server ?? 'MCP server')} asks: ${String(args.message ?? '')}`);
    case 'authorization':
      return clipLine(`${String(args.server ?? 'MCP server')} needs you to sign in`);
    case 'budget': {
      const spent = Number(args.spentUsd ?? 0);
      const cap = Number(args.capUsd ?? 0);
      return clipLine(cap ? `budget reached: $${spent.toFixed(2)} of $${cap.toFixed(2)}` : `budget reached: ${String(args.spentTokens ?? '?')} of ${String(args.capTokens ?? '?')} tokens`);
    }
    default:
      if (item.tool === 'exec' && typeof args.command === 'string') return clipLine(`exec: ${args.command}`);
      return clipLine(`${item.tool} ${JSON.stringify(item.args ?? null)}`);
  }
}

export function approvalPush(item: PendingApproval, parentChain: string[], token?: string): ApprovalPush {
  return {
    type: 'approval',
    approvalId: item.approvalId,
    kind: item.kind,
    sessionKey: item.sessionKey,
    tool: item.tool,
    parentChain,
    summary: summaryOf(item),
    ...(token ? { token } : {}),
  };
}
