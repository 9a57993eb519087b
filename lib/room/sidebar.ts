// Pure helpers for the sessions sidebar: paging, kind filters, search, grouping by agent, unread and j/k movement.
import type { SessionSummary, SessionsPage } from '@/lib/trpc/types';
import type { SidebarKind } from '@/stores/room-store';

const KIND_OF: Record<string, SidebarKind | undefined> = { main: 'main', subagent: 'delegate', channel: 'channel' };

export function sidebarKind(kind: string): SidebarKind | undefined {
  return KIND_OF[kind];
}

/**
 * The loaded `sessions.list` pages as one list, newest activity first, one row per session: a session whose activity
 * moved it while pages were being loaded can sit on two pages — its newest summary wins.
 */
export function flattenSessionPages(pages: readonly (Pick<SessionsPage, 'sessions'> & { parents?: SessionSummary[] })[] | undefined): SessionSummary[] {
  if (!pages) return [];
  const byKey = new Map<string, SessionSummary>();
  for (const page of pages) {
    // With each page, the sessions above its delegates that no loaded page holds, so a delegate nests under its parent.
    for (const s of [...page.sessions, ...(page.parents ?? [])]) {
      const prev = byKey.get(s.sessionKey);
      if (!prev || s.lastActivityAt > prev.lastActivityAt) byKey.set(s.sessionKey, s);
    }
  }
  return [...byKey.values()].sort((a, b) => b.lastActivityAt.localeCompare(a.lastActivityAt) || a.sessionKey.localeCompare(b.sessionKey));
}

/** Sessions matching the kind filters (none pressed = every kind) and the search text (key, label, agent). */
export function filterSessions(sessions: readonly SessionSummary[], kinds: readonly SidebarKind[], search: string): SessionSummary[] {
  const q = search.trim().toLowerCase();
  return sessions.filter((s) => {
    if (kinds.length > 0) {
      const k = sidebarKind(s.kind);
      if (!k || !kinds.includes(k)) return false;
    }
    if (!q) return true;
    return [s.sessionKey, s.label ?? '', s.agentId].some((v) => v.toLowerCase().includes(q));
  });
}

export interface AgentGroup {
  agentId: string;
  sessions: SessionSummary[];
}

/** Groups by agent in the configured agents' order (unknown agents after), sessions newest activity first. */
export function groupByAgent(sessions: readonly SessionSummary[], agentOrder: readonly string[]): AgentGroup[] {
  const groups = new Map<string, SessionSummary[]>();
  for (const id of agentOrder) groups.set(id, []);
  for (const s of sessions) {
    const list = groups.get(s.agentId) ?? [];
    list.push(s);
    groups.set(s.agentId, list);
  }
  return [...groups.entries()]
    .filter(([, list]) => list.length > 0)
    .map(([agentId, list]) => ({ agentId, sessions: [...list].sort((a, b) => b.lastActivityAt.localeCompare(a.lastActivityAt)) }));
}

export interface SessionNode {
  session: SessionSummary;
  /** Delegate sessions started by this one (loaded and shown), newest activity first, nested the same way. */
  children: SessionNode[];
}

export interface AgentTree {
  agentId: string;
  roots: SessionNode[];
}

/**
 * Nests each delegate session under its parent (CONTRACT §7: the sidebar's tree) when the parent is shown too; a
 * delegate whose parent is not loaded (paged out, filtered) stays a root of its own agent's group.
 */
export function nestDelegates(groups: readonly AgentGroup[]): AgentTree[] {
  const nodes = new Map<string, SessionNode>();
  for (const g of groups) for (const s of g.sessions) nodes.set(s.sessionKey, { session: s, children: [] });
  const nested = new Set<string>();
  for (const node of nodes.values()) {
    const parentKey = node.session.parentKey;
    const parent = parentKey ? nodes.get(parentKey) : undefined;
    if (!parent || parentKey === node.session.sessionKey || isAncestor(node, parent.session.sessionKey)) continue;
    parent.children.push(node);
    nested.add(node.session.sessionKey);
  }
  return groups.map((g) => ({ agentId: g.agentId, roots: g.sessions.filter((s) => !nested.has(s.sessionKey)).map((s) => nodes.get(s.sessionKey)!) }));
}

/** Whether `key` is already under `node` (bad data with a parent cycle must not loop). */
function isAncestor(node: SessionNode, key: string): boolean {
  const stack = [...node.children];
  for (let n = stack.pop(); n; n = stack.pop()) {
    if (n.session.sessionKey === key) return true;
    stack.push(...n.children);
  }
  return false;
}

/** The tree in display order (depth first): what j/k walk through. */
export function treeOrder(trees: readonly AgentTree[]): string[] {
  const out: string[] = [];
  const walk = (n: SessionNode) => {
    out.push(n.session.sessionKey);
    n.children.forEach(walk);
  };
  for (const t of trees) t.roots.forEach(walk);
  return out;
}

/** The session `step` places after (j = +1) or before (k = -1) the current one in display order, wrapping never. */
export function stepSession(order: readonly string[], current: string, step: 1 | -1): string | undefined {
  if (order.length === 0) return undefined;
  const i = order.indexOf(current);
  if (i < 0) return order[step === 1 ? 0 : order.length - 1];
  return order[Math.min(order.length - 1, Math.max(0, i + step))];
}

/** Unread: it gained rows since it was last open here (sessions never opened in this tab are not flagged). */
export function isUnread(s: SessionSummary, seen: Readonly<Record<string, number>>, selected: string): boolean {
  const last = seen[s.sessionKey];
  return s.sessionKey !== selected && last !== undefined && s.messageCount > last;
}

export type SessionsData = { pages: SessionsPage[]; pageParams: unknown[] };

/** The cached session list with one session's status (and activity time) changed; the same object when it is not there. */
export function patchSessionStatus(data: SessionsData | undefined, sessionKey: string, status: 'running' | 'idle', at: string): SessionsData | undefined {
  if (!data?.pages) return data;
  let hit = false;
  const pages = data.pages.map((p) => {
    if (!p.sessions.some((s) => s.sessionKey === sessionKey)) return p;
    hit = true;
    return { ...p, sessions: p.sessions.map((s) => (s.sessionKey === sessionKey ? { ...s, status, lastActivityAt: at > s.lastActivityAt ? at : s.lastActivityAt } : s)) };
  });
  return hit ? { ...data, pages } : data;
}
