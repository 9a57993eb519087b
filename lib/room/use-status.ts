// The status panel's figures (gateway `status`): polled every second (on screen within a second of the store) and refreshed by the open session's events.
import { useTRPC } from '@/lib/trpc/client';
import { useQuery } from '@tanstack/react-query';

export const STATUS_POLL_MS = 1_000;

export function useStatus() {
  const trpc = useTRPC();
  return useQuery(trpc.status.get.queryOptions(undefined, { refetchInterval: STATUS_POLL_MS, staleTime: 0 }));
}
