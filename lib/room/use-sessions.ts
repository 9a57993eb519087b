// The sessions list (newest activity first, paged by cursor) shared by the sidebar and the session pane, and one session's summary.
import { useTRPC } from '@/lib/trpc/client';
import type { SessionSummary } from '@/lib/trpc/types';
import { useInfiniteQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { sessionsListInput, sessionsPaging } from './queries';
import { flattenSessionPages } from './sidebar';

export function useSessionsList() {
  const trpc = useTRPC();
  const query = useInfiniteQuery(
    trpc.sessions.list.infiniteQueryOptions(sessionsListInput, {
      ...sessionsPaging,
      // Other sessions change without this tab subscribing to them: a gentle poll keeps the list fresh. A refetch
      // walks every loaded page again from the first, with fresh cursors, so sessions that moved are not lost.
      refetchInterval: 5_000,
    }),
  );
  const sessions = useMemo(() => flattenSessionPages(query.data?.pages), [query.data]);
  return { ...query, sessions };
}

/** The open session's summary from the list (undefined until it has a row, or when it is beyond the loaded pages). */
export function useSessionSummary(sessionKey: string): SessionSummary | undefined {
  return useSessionsList().sessions.find((s) => s.sessionKey === sessionKey);
}
