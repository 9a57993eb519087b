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
export function flattenSessionPages(pages: readonly Pick<SessionsPage, 'sessions'>[] | undefined): SessionSummary[] {
  if (!pages) return [];
  const byKey = new Map<string, SessionSummary>();
  for (const page of pages) {
    for (const s of page.sessions) {
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
