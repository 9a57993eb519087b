// Every pending approval of every session (`approvals.list` without a session): the inbox, its button's count and the status panel's figure.
import { useTRPC } from '@/lib/trpc/client';
import { useQuery } from '@tanstack/react-query';

/**
 * Every pending approval, oldest first: the Approvals button's count and the status panel's pending figure. Polled every
 * second as well as invalidated by approval events: other sessions' events do not reach this tab.
 */
export function useInbox() {
  const trpc = useTRPC();
  const query = useQuery(trpc.approvals.list.queryOptions({}, { refetchInterval: 1_000 }));
  const approvals = [...(query.data?.approvals ?? [])].sort((a, b) => a.requestedAt.localeCompare(b.requestedAt) || a.approvalId.localeCompare(b.approvalId));
  return { query, approvals };
}
