'use client';
// The pending-approval count shown in two places (the Approvals button, the status panel), read once and handed to both.
import { useInbox } from '@/lib/room/use-inbox';
import { useTRPC } from '@/lib/trpc/client';
import { useQueryClient } from '@tanstack/react-query';
import { createContext, useContext, useEffect, useRef, type ReactNode } from 'react';

// Two readers of the same query can still paint different numbers: one that re-renders for another reason (the status
// panel, on its own poll) reads the query's newest data before the other is told of it. One reader, one number.
const PendingCount = createContext<number | undefined>(undefined);

/** Every pending approval of every session, counted; undefined until the list has loaded. */
export function PendingCountProvider({ children }: { children: ReactNode }) {
  const { query, approvals } = useInbox();
  useSidebarFollowsInbox(query.data ? approvals.map((a) => a.approvalId).join(' ') : undefined);
  return <PendingCount.Provider value={query.data ? approvals.length : undefined}>{children}</PendingCount.Provider>;
}

export const usePendingCount = () => useContext(PendingCount);

/**
 * The sidebar's attention badges (`sessions.list`'s pending counts, a parent's with its delegates') follow the inbox: when
 * the set of pending items changes, the list is asked again. Its own poll is every 5 s, and a delegate's approval
 * events do not reach this tab's stream, so a parent's badge came and went ~5 s after the Approvals count (probe F).
 */
function useSidebarFollowsInbox(pending: string | undefined) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const last = useRef<string | undefined>(undefined);
  useEffect(() => {
    if (pending === undefined) return;
    const before = last.current;
    last.current = pending;
    if (before !== undefined && before !== pending) void qc.invalidateQueries({ queryKey: trpc.sessions.list.pathKey() });
  }, [pending, qc, trpc]);
}
