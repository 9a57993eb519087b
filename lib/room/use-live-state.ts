// Reads (and exposes the cache key of) a session's live event state kept in the TanStack Query cache.
import { useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { emptyLiveState, type LiveState } from './live-state';

export const liveStateKey = (sessionKey: string) => ['crosstalk', 'live', sessionKey] as const;

export function getLiveState(qc: QueryClient, sessionKey: string): LiveState {
  return qc.getQueryData<LiveState>(liveStateKey(sessionKey)) ?? emptyLiveState();
}

export function useLiveState(sessionKey: string): LiveState {
  const qc = useQueryClient();
  const { data } = useQuery({
    queryKey: liveStateKey(sessionKey),
    // Never fetched: only the event subscription writes this entry (a refetch just keeps what is there).
    queryFn: () => getLiveState(qc, sessionKey),
    initialData: emptyLiveState,
    staleTime: Infinity,
    gcTime: 10 * 60_000,
  });
  return data;
}
