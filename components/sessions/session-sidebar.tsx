'use client';
// The room's left column: every configured agent (by id) with its sessions grouped under it, kind filters, search,
// running / unread / needs-approval markers, older sessions a page at a time (button or scroll), and the status panel.
import { cn } from '@/lib/cn';
import { isUnread, type SessionNode } from '@/lib/room/sidebar';
import { useSidebarSessions } from '@/lib/room/use-sidebar';
import type { AgentInfo, SessionSummary } from '@/lib/trpc/types';
import type { SidebarKind } from '@/stores/room-store';
import { useRoomStore } from '@/stores/room-store-provider';
import { type KeyboardEvent, memo, useEffect, useRef, type UIEvent } from 'react';
import { PairingsPanel } from '../pairings/pairings-panel';
import { StatusPanel } from '../status/status-panel';
import { SearchResults } from './search-results';
import { Badge } from '../ui/badge';
import { Button } from '../ui/button';
import { LocalTime } from '../ui/local-time';
import { TextInput } from '@/components/ui/text-input';
import { mainSessionKey } from '@/server/sessions/keys';
import { transcriptQueryOptions } from '@/lib/room/use-transcript';
import { useTRPC } from '@/lib/trpc/client';
import { useQueryClient } from '@tanstack/react-query';

function usePrefetchTranscript() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  return (sessionKey: string) =>
    void qc.prefetchInfiniteQuery({ ...transcriptQueryOptions(trpc, sessionKey), staleTime: 10_000 });
}

const KINDS: Array<{ kind: SidebarKind; label: string }> = [
  { kind: 'main', label: 'Main' },
  { kind: 'delegate', label: 'Delegate' },
  { kind: 'channel', label: 'Channel' },
];

export function SessionSidebar() {
  const selected = useRoomStore((s) => s.selectedSessionKey);
  const selectSession = useRoomStore((s) => s.selectSession);
  const sidebarOpen = useRoomStore((s) => s.sidebarOpen);
  const setSidebarOpen = useRoomStore((s) => s.setSidebarOpen);
  const kindFilter = useRoomStore((s) => s.kindFilter);
  const toggleKind = useRoomStore((s) => s.toggleKind);
  const search = useRoomStore((s) => s.sessionSearch);
  const setSearch = useRoomStore((s) => s.setSessionSearch);
  const seen = useRoomStore((s) => s.seen);
  const noteCounts = useRoomStore((s) => s.noteCounts);
  const { agents, sessions, groups, trees, order, filtered } = useSidebarSessions();
  const listRef = useRef<HTMLDivElement>(null);

  // Unread: a baseline for every listed session, and the open one is always read.
  useEffect(() => {
    if (sessions.data) noteCounts(Object.fromEntries(sessions.sessions.map((s) => [s.sessionKey, s.messageCount])), selected);
  }, [sessions.data, sessions.sessions, selected, noteCounts]);

  const { hasNextPage, isFetchingNextPage, fetchNextPage } = sessions;
  const loadMore = () => {
    if (hasNextPage && !isFetchingNextPage) void fetchNextPage();
  };
  // Scrolling near the end of the list loads the next page too.
  const onListScroll = (e: UIEvent<HTMLDivElement>) => {
    const el = e.currentTarget;
    if (el.scrollTop > 0 && el.scrollHeight - el.scrollTop - el.clientHeight < 48) loadMore();
  };

  // j/k (or a click elsewhere) moves the selection: keep its row in view. In the next frame, where the layout it
  // reads is computed for the paint anyway (run now, it would force one more while the switch is under way).
  useEffect(() => {
    const frame = requestAnimationFrame(() =>
      listRef.current?.querySelector<HTMLElement>(`[data-session-key="${CSS.escape(selected)}"]`)?.scrollIntoView({ block: 'nearest' }),
    );
    return () => cancelAnimationFrame(frame);
  }, [selected]);

  // One Tab stop for the whole list (a roving tabindex): the open session's row, or the first row when it is not
  // listed; the arrow keys, Home and End move the focus between rows, Enter opens the focused one.
  const tabStop = order.includes(selected) ? selected : order[0];
  const onListKey = (e: KeyboardEvent<HTMLDivElement>) => {
    const from = (e.target as HTMLElement).closest?.('[data-testid="session-item"]');
    if (!from || !['ArrowDown', 'ArrowUp', 'Home', 'End'].includes(e.key)) return;
    const rows = [...(listRef.current?.querySelectorAll<HTMLElement>('[data-testid="session-item"]') ?? [])];
    const at = rows.indexOf(from as HTMLElement);
    const to = e.key === 'Home' ? 0 : e.key === 'End' ? rows.length - 1 : Math.min(rows.length - 1, Math.max(0, at + (e.key === 'ArrowDown' ? 1 : -1)));
    e.preventDefault();
    rows[to]?.focus();
  };

  const configured = new Map<string, AgentInfo>((agents.data?.agents ?? []).map((a) => [a.agentId, a]));
  const agentIds = [...configured.keys()];
  // Every configured agent is listed (CONTRACT §7), with its sessions under it; agents not configured come after.
  const shownGroups = [
    ...agentIds.map((id) => ({ agentId: id, roots: trees.find((g) => g.agentId === id)?.roots ?? [] })),
    ...trees.filter((g) => !configured.has(g.agentId)),
  ];

  return (
    <>
      {sidebarOpen && <div aria-hidden className="fixed inset-0 z-30 bg-black/30 md:hidden" onClick={() => setSidebarOpen(false)} />}
      <nav
        aria-label="Sessions"
        data-testid="sidebar"
        data-open={sidebarOpen ? 'true' : undefined}
        className={cn(
          'w-72 shrink-0 flex-col overflow-hidden border-r border-zinc-200 bg-zinc-50 md:static md:flex md:w-56 xl:w-64 dark:border-zinc-800 dark:bg-zinc-900',
          sidebarOpen ? 'fixed inset-y-0 left-0 z-40 flex max-w-[85vw] shadow-xl' : 'hidden',
        )}
      >
        <div className="flex items-center px-4 py-3">
          <span className="text-sm font-semibold tracking-tight">crosstalk</span>
          <Button size="sm" variant="ghost" className="ml-auto md:hidden" aria-label="Close sessions" onClick={() => setSidebarOpen(false)}>
            ✕
          </Button>
        </div>
        <div className="space-y-2 px-3 pb-2">
          {/* One searchbox: it filters the sessions below by name and searches every transcript (sessions.search). */}
          <TextInput
            type="search"
            aria-label="Search"
            placeholder="Search sessions and messages"
            value={search}
            onChange={(e) => setSearch(e.target.value)}
            className="w-full dark:bg-zinc-950"
          />
          <SearchResults query={search} />
          <div role="group" aria-label="Session kinds" className="flex gap-1">
            {KINDS.map(({ kind, label }) => (
              <button
                key={kind}
                type="button"
                data-testid={`kind-filter-${kind}`}
                aria-pressed={kindFilter.includes(kind)}
                onClick={() => toggleKind(kind)}
                className={cn(
                  'rounded-full border px-2 py-0.5 text-[11px]',
                  kindFilter.includes(kind)
                    ? 'border-indigo-500 bg-indigo-50 text-indigo-900 dark:bg-indigo-950 dark:text-indigo-100'
                    : 'border-zinc-300 text-zinc-600 hover:bg-zinc-200/70 dark:border-zinc-700 dark:text-zinc-400 dark:hover:bg-zinc-800',
                )}
              >
                {label}
              </button>
            ))}
          </div>
        </div>
        <div ref={listRef} onScroll={onListScroll} onKeyDown={onListKey} data-testid="sidebar-scroll" className="min-h-0 flex-1 overflow-y-auto px-2 pb-3">
          {agents.isError && <p className="px-2 text-xs text-rose-600">Could not load agents.</p>}
          {sessions.isError && <p className="px-2 text-xs text-rose-600">Could not load sessions.</p>}
          <ul data-testid="agent-list" aria-label="Agents" className="space-y-2">
            {shownGroups.map((g) => (
              <li key={g.agentId} data-testid="agent-group" data-agent-id={g.agentId}>
                <AgentHeader agentId={g.agentId} agent={configured.get(g.agentId)} active={selected === mainSessionKey(g.agentId)} onSelect={() => selectSession(mainSessionKey(g.agentId))} />
                {g.roots.length > 0 && (
                  <ul role="tree" data-testid="session-list" aria-label={`Sessions of ${g.agentId}`} className="mt-0.5 space-y-0.5 pl-2">
                    {g.roots.map((n) => (
                      <SessionTreeItem key={n.session.sessionKey} node={n} level={1} selected={selected} tabStop={tabStop} seen={seen} />
                    ))}
                  </ul>
                )}
              </li>
            ))}
          </ul>
          {sessions.data && groups.length === 0 && (
            <p className="px-2 pt-2 text-xs text-zinc-500">
              {filtered ? (hasNextPage ? 'No loaded session matches.' : 'No session matches.') : 'No sessions yet.'}
            </p>
          )}
          {hasNextPage && (
            <div className="px-2 pt-2">
              <Button
                size="sm"
                variant="ghost"
                className="w-full"
                data-testid="load-more-sessions"
                aria-label="Load more sessions"
                disabled={isFetchingNextPage}
                aria-busy={isFetchingNextPage || undefined}
                onClick={loadMore}
              >
                {isFetchingNextPage ? 'Loading sessions…' : `Load more sessions (${sessions.sessions.length} shown)`}
              </Button>
            </div>
          )}
          <p className="px-2 pt-3 text-[10px] text-zinc-400">
            <kbd>j</kbd>/<kbd>k</kbd> move through sessions, <kbd>↑</kbd>/<kbd>↓</kbd> through the focused list
          </p>
        </div>
        <PairingsPanel className="shrink-0 border-t border-zinc-200 dark:border-zinc-800" />
        <StatusPanel className="shrink-0 border-t border-zinc-200 dark:border-zinc-800" />
      </nav>
    </>
  );
}

function AgentHeader({ agentId, agent, active, onSelect }: { agentId: string; agent?: AgentInfo; active: boolean; onSelect: () => void }) {
  if (!agent) {
    return <h3 className="px-2 pt-1 font-mono text-[11px] font-semibold text-zinc-500">{agentId}</h3>;
  }
  return (
    <button
      type="button"
      data-testid={`agent-item-${agentId}`}
      aria-current={active ? 'page' : undefined}
      aria-label={`Agent ${agentId}: open main session`}
      title={`${agent.name} · ${Array.isArray(agent.model) ? agent.model.join(', ') : agent.model}`}
      onClick={onSelect}
      className={cn(
        'flex w-full items-center gap-2 rounded-md px-2 py-1.5 text-left text-sm',
        active ? 'bg-indigo-100 text-indigo-900 dark:bg-indigo-950 dark:text-indigo-100' : 'hover:bg-zinc-200/70 dark:hover:bg-zinc-800',
      )}
    >
      <span aria-hidden className="flex size-6 items-center justify-center rounded bg-zinc-300 text-[11px] font-semibold uppercase dark:bg-zinc-700">
        {agentId.slice(0, 2)}
      </span>
      <span className="font-mono">{agentId}</span>
      {agent.name.toLowerCase() !== agentId && <span className="truncate text-xs text-zinc-500">{agent.name}</span>}
    </button>
  );
}

/** One session of the tree, its delegate sessions nested under it (their approvals mark it too: pendingApprovals). */
function SessionTreeItem({ node, level, selected, tabStop, seen }: { node: SessionNode; level: number; selected: string; tabStop: string | undefined; seen: Record<string, number> }) {
  const s = node.session;
  return (
    <li role="treeitem" aria-level={level} aria-selected={s.sessionKey === selected} aria-expanded={node.children.length > 0 ? true : undefined} aria-label={s.label || s.sessionKey.replace(/^agent:[^:]+:/, '')} data-testid="session-tree-item" data-tree-key={s.sessionKey}>
      <SessionItem session={s} active={s.sessionKey === selected} tabStop={s.sessionKey === tabStop} unread={isUnread(s, seen, selected)} />
      {node.children.length > 0 && (
        <ul role="group" className="mt-0.5 space-y-0.5 border-l border-zinc-200 pl-2 dark:border-zinc-800">
          {node.children.map((c) => (
            <SessionTreeItem key={c.session.sessionKey} node={c} level={level + 1} selected={selected} tabStop={tabStop} seen={seen} />
          ))}
        </ul>
      )}
    </li>
  );
}

// Memoized: a switch re-renders the two rows whose `active` changed, not all of them.
const SessionItem = memo(function SessionItem({ session, active, tabStop, unread }: { session: SessionSummary; active: boolean; tabStop: boolean; unread: boolean }) {
  const selectSession = useRoomStore((s) => s.selectSession);
  const onSelect = () => selectSession(session.sessionKey);
  const pending = session.pendingApprovals ?? 0;
  const running = session.status === 'running';
  const rest = session.sessionKey.replace(/^agent:[^:]+:/, '');
  const prefetch = usePrefetchTranscript();
  return (
    <>
      <button
        type="button"
        data-testid="session-item"
        data-session-key={session.sessionKey}
        data-kind={session.kind}
        data-running={running ? 'true' : undefined}
        data-attention={pending > 0 ? 'true' : undefined}
        data-unread={unread ? 'true' : undefined}
        aria-current={active ? 'page' : undefined}
        tabIndex={tabStop ? 0 : -1}
        title={session.sessionKey}
        onClick={onSelect}
        // A pointer resting on a row (or focus reaching it) loads its newest page, so the switch shows it at once.
        onPointerEnter={() => !active && prefetch(session.sessionKey)}
        onFocus={() => !active && prefetch(session.sessionKey)}
        className={cn(
          'flex w-full flex-col gap-0.5 rounded-md px-2 py-1.5 text-left',
          active ? 'bg-indigo-100 text-indigo-900 dark:bg-indigo-950 dark:text-indigo-100' : 'hover:bg-zinc-200/70 dark:hover:bg-zinc-800',
        )}
      >
        <span className="flex items-center gap-1.5">
          {unread && <span role="img" aria-label="unread" className="size-1.5 shrink-0 rounded-full bg-indigo-500" />}
          <span className={cn('truncate font-mono text-xs', unread && 'font-semibold')}>{session.label || rest}</span>
          {pending > 0 && (
            <span data-testid="attention-badge" className="ml-auto">
              <Badge tone="warning">
                <span aria-hidden>⚠ {pending}</span>
                <span className="sr-only">needs approval ({pending} pending)</span>
              </Badge>
            </span>
          )}
        </span>
        <span className="flex flex-wrap items-center gap-1.5 text-[11px] text-zinc-500">
          <span>{session.kind === 'subagent' ? 'delegate' : session.kind}</span>
          <span aria-hidden>·</span>
          <span>{session.messageCount} msgs</span>
          <span aria-hidden>·</span>
          <LocalTime iso={session.lastActivityAt} format="relative" />
          {running && (
            <span data-testid="running-marker">
              <Badge tone="info">running</Badge>
            </span>
          )}
        </span>
      </button>
    </>
  );
});
