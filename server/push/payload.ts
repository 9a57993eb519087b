// What a push says about a pending item (CONTRACT §7 "Notifications"): the plaintext JSON and its one-line summary.
import type { DecidedBy, PendingApproval } from '../events/types';

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

/** The plaintext must fit one push message (4096 bytes on the wire, less the aes128gcm header and padding). */
export const MAX_PLAINTEXT = 3000;

/**
 * What a browser that was sent an item is told once the item is no longer pending (decided anywhere, or closed by its
 * run's end): its notification turns into a plain "decided" one. No token: there is nothing left to answer.
 */
export interface ResolvedPush {
  type: 'resolved';
  approvalId: string;
  /** allow_once, allow_always, deny, accept, decline, or cancel (closed by its run's end: no one decided). */
  decision?: string;
  /** Who decided (CONTRACT §3 `decidedBy`: its type, and its id clipped); none for an item its run's end closed. */
  decidedBy?: { type: DecidedBy['type']; id?: string };
}

export function resolvedPush(approvalId: string, decision?: string | null, by?: DecidedBy): ResolvedPush {
  const id = by?.id ? clipLine(by.id, 64) : '';
  const body: ResolvedPush = { type: 'resolved', approvalId, ...(decision ? { decision } : {}), ...(by ? { decidedBy: { type: by.type, ...(id ? { id } : {}) } } : {}) };
  return JSON.stringify(body).length > MAX_PLAINTEXT ? { type: 'resolved', approvalId: approvalId.slice(0, 256) } : body;
}
