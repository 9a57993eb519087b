// The sessions list (newest activity first) shared by the sidebar and the session pane, and one session's summary.
import { useTRPC } from '@/lib/trpc/client';
import type { SessionSummary } from '@/lib/trpc/types';
import { useQuery } from '@tanstack/react-query';
import { sessionsListInput } from './queries';

export function useSessionsList() {
  const trpc = useTRPC();
  // Other sessions change without this tab subscribing to them: a gentle poll keeps the list fresh.
  return useQuery(trpc.sessions.list.queryOptions(sessionsListInput, { refetchInterval: 5_000 }));
}

/** The open session's summary from the list (undefined until it has a row, or when it is beyond the first page). */
export function useSessionSummary(sessionKey: string): SessionSummary | undefined {
  return useSessionsList().data?.sessions.find((s) => s.sessionKey === sessionKey);
}
