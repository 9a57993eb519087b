// The sidebar's sessions as shown (filtered, grouped by agent, delegates under their parents, newest first) — shared
// by the sidebar and j/k navigation.
import { useTRPC } from '@/lib/trpc/client';
import { useRoomStore } from '@/stores/room-store-provider';
import { useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { filterSessions, groupByAgent, nestDelegates, treeOrder } from './sidebar';
import { useSessionsList } from './use-sessions';

export function useAgents() {
  const trpc = useTRPC();
  return useQuery(trpc.agents.list.queryOptions({}, { staleTime: 5 * 60_000 }));
}

export function useSidebarSessions() {
  const agents = useAgents();
  const sessions = useSessionsList();
  const kinds = useRoomStore((s) => s.kindFilter);
  const search = useRoomStore((s) => s.sessionSearch);
  const agentIds = useMemo(() => agents.data?.agents.map((a) => a.agentId) ?? [], [agents.data]);
  const groups = useMemo(
    () => groupByAgent(filterSessions(sessions.sessions, kinds, search), agentIds),
    [sessions.sessions, kinds, search, agentIds],
  );
  const trees = useMemo(() => nestDelegates(groups), [groups]);
  const order = useMemo(() => treeOrder(trees), [trees]);
  return { agents, sessions, groups, trees, order, filtered: kinds.length > 0 || search.trim() !== '' };
}
