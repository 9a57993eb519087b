'use client';
// The room's left column: every configured agent (by id) and the sessions, newest activity first.
import { cn } from '@/lib/cn';
import { useSessionsList } from '@/lib/room/use-sessions';
import { useTRPC } from '@/lib/trpc/client';
import type { SessionSummary } from '@/lib/trpc/types';
import { useRoomStore } from '@/stores/room-store-provider';
import { useQuery } from '@tanstack/react-query';
import { Badge } from '../ui/badge';
import { LocalTime } from '../ui/local-time';

export function mainSessionKey(agentId: string): string {
  return `agent:${agentId}:main`;
}

export function SessionSidebar() {
  const trpc = useTRPC();
  const selected = useRoomStore((s) => s.selectedSessionKey);
  const selectSession = useRoomStore((s) => s.selectSession);
  const agents = useQuery(trpc.agents.list.queryOptions({}, { staleTime: 5 * 60_000 }));
  const sessions = useSessionsList();

  return (
    <nav
      aria-label="Sessions"
      data-testid="sidebar"
      className="flex w-64 shrink-0 flex-col overflow-hidden border-r border-zinc-200 bg-zinc-50 dark:border-zinc-800 dark:bg-zinc-900/60"
    >
      <div className="px-4 py-3 text-sm font-semibold tracking-tight">crosstalk</div>
      <section aria-labelledby="agents-heading" className="px-2 pb-2">
        <h2 id="agents-heading" className="px-2 pb-1 text-[11px] font-semibold tracking-wide text-zinc-500 uppercase">
          Agents
        </h2>
        {agents.isError && <p className="px-2 text-xs text-rose-600">Could not load agents.</p>}
        <ul data-testid="agent-list" className="space-y-0.5">
          {agents.data?.agents.map((a) => {
            const key = mainSessionKey(a.agentId);
            const active = selected === key;
            return (
              <li key={a.agentId}>
                <button
                  type="button"
                  data-testid={`agent-item-${a.agentId}`}
                  aria-current={active ? 'page' : undefined}
                  title={`${a.name} · ${Array.isArray(a.model) ? a.model.join(', ') : a.model}`}
                  onClick={() => selectSession(key)}
                  className={cn(
                    'flex w-full items-center gap-2 rounded-md px-2 py-1.5 text-left text-sm',
                    active ? 'bg-indigo-100 text-indigo-900 dark:bg-indigo-950 dark:text-indigo-100' : 'hover:bg-zinc-200/70 dark:hover:bg-zinc-800',
                  )}
                >
                  <span aria-hidden className="flex size-6 items-center justify-center rounded bg-zinc-300 text-[11px] font-semibold uppercase dark:bg-zinc-700">
                    {a.agentId.slice(0, 2)}
                  </span>
                  <span className="font-mono">{a.agentId}</span>
                  {a.name.toLowerCase() !== a.agentId && <span className="truncate text-xs text-zinc-500">{a.name}</span>}
                </button>
              </li>
            );
          })}
        </ul>
      </section>
      <section aria-labelledby="sessions-heading" className="flex min-h-0 flex-1 flex-col px-2">
        <h2 id="sessions-heading" className="px-2 pt-2 pb-1 text-[11px] font-semibold tracking-wide text-zinc-500 uppercase">
          Sessions
        </h2>
        {sessions.isError && <p className="px-2 text-xs text-rose-600">Could not load sessions.</p>}
        {sessions.data && sessions.data.sessions.length === 0 && <p className="px-2 text-xs text-zinc-500">No sessions yet.</p>}
        <ul data-testid="session-list" className="min-h-0 flex-1 space-y-0.5 overflow-y-auto pb-3">
          {sessions.data?.sessions.map((s) => (
            <SessionItem key={s.sessionKey} session={s} active={s.sessionKey === selected} onSelect={() => selectSession(s.sessionKey)} />
          ))}
        </ul>
      </section>
    </nav>
  );
}

function SessionItem({ session, active, onSelect }: { session: SessionSummary; active: boolean; onSelect: () => void }) {
  const pending = session.pendingApprovals ?? 0;
  return (
    <li>
      <button
        type="button"
        data-testid="session-item"
        data-session-key={session.sessionKey}
        aria-current={active ? 'page' : undefined}
        onClick={onSelect}
        className={cn(
          'flex w-full flex-col gap-0.5 rounded-md px-2 py-1.5 text-left',
          active ? 'bg-indigo-100 text-indigo-900 dark:bg-indigo-950 dark:text-indigo-100' : 'hover:bg-zinc-200/70 dark:hover:bg-zinc-800',
        )}
      >
        <span className="truncate font-mono text-xs">{session.label || session.sessionKey}</span>
        <span className="flex items-center gap-1.5 text-[11px] text-zinc-500">
          <span>{session.kind}</span>
          <span aria-hidden>·</span>
          <span>{session.messageCount} msgs</span>
          <span aria-hidden>·</span>
          <LocalTime iso={session.lastActivityAt} format="relative" />
          {session.status === 'running' && <Badge tone="info">running</Badge>}
          {pending > 0 && <Badge tone="warning">needs approval</Badge>}
        </span>
      </button>
    </li>
  );
}
