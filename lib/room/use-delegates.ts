// The agent picker's data: a parent's delegate sessions (running first), previews, and the resume / dismiss mutations.
import { useTRPC } from '@/lib/trpc/client';
import type { DelegateSummary } from '@/lib/trpc/types';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMemo } from 'react';

export const DELEGATES_PAGE = 50;

/** Running first, then newest interaction first (the server pages newest first; running ones may sit on any page). */
export function sortDelegates(list: readonly DelegateSummary[]): DelegateSummary[] {
  const seen = new Map<string, DelegateSummary>();
  for (const d of list) if (!seen.has(d.conversation_id)) seen.set(d.conversation_id, d);
  return [...seen.values()].sort(
    (a, b) => Number(b.status === 'running') - Number(a.status === 'running') || b.last_interacted_at.localeCompare(a.last_interacted_at),
  );
}

export function useDelegates(sessionKey: string, enabled = true) {
  const trpc = useTRPC();
  const query = useInfiniteQuery(
    trpc.delegates.list.infiniteQueryOptions(
      { sessionKey, limit: DELEGATES_PAGE },
      {
        enabled,
        getNextPageParam: (last) => last.next_cursor ?? undefined,
        // Delegates run in sessions this tab does not subscribe to: poll, faster while one runs.
        refetchInterval: (q) => (q.state.data?.pages.some((p) => p.sessions.some((d) => d.status === 'running')) ? 1_500 : 5_000),
        staleTime: 0,
        retry: false,
      },
    ),
  );
  const delegates = useMemo(() => sortDelegates(query.data?.pages.flatMap((p) => p.sessions) ?? []), [query.data]);
  return { ...query, delegates };
}

export function useDelegatePreview(sessionKey: string, conversationId: string, limit: number, enabled: boolean) {
  const trpc = useTRPC();
  return useQuery(
    trpc.delegates.messages.queryOptions({ sessionKey, conversation_id: conversationId, limit }, { enabled, staleTime: 0, retry: false }),
  );
}

/** Everything a delegate change moves: the delegate lists, the status panel, the sidebar, the parent's transcript. */
function useInvalidateDelegates() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  return () =>
    Promise.all([
      qc.invalidateQueries({ queryKey: trpc.delegates.pathKey() }),
      qc.invalidateQueries({ queryKey: trpc.status.pathKey() }),
      qc.invalidateQueries({ queryKey: trpc.sessions.list.pathKey() }),
      qc.invalidateQueries({ queryKey: trpc.chat.history.pathKey() }),
    ]);
}

export function useResumeDelegate() {
  const trpc = useTRPC();
  const invalidate = useInvalidateDelegates();
  return useMutation(trpc.delegates.resume.mutationOptions({ onSettled: invalidate }));
}

export function useDismissDelegate() {
  const trpc = useTRPC();
  const invalidate = useInvalidateDelegates();
  return useMutation(trpc.delegates.dismiss.mutationOptions({ onSettled: invalidate }));
}
