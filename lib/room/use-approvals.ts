// Pending approvals of a session (server order; the toolbox orders them with their calls) and the resolve mutation.
import { useTRPC } from '@/lib/trpc/client';
import type { PendingApproval } from '@/lib/trpc/types';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMemo } from 'react';

export function useApprovals(sessionKey: string) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const query = useQuery(trpc.approvals.list.queryOptions({ sessionKey }));
  const pending: PendingApproval[] = useMemo(() => query.data?.approvals ?? [], [query.data]);
  const resolve = useMutation(
    trpc.approvals.resolve.mutationOptions({
      onSettled: () => qc.invalidateQueries({ queryKey: trpc.approvals.list.queryKey({ sessionKey }) }),
    }),
  );
  return { pending, query, resolve };
}
