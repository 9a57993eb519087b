'use client';
// The pending-approval count shown in two places (the Approvals button, the status panel), read once and handed to both.
import { useInbox } from '@/lib/room/use-inbox';
import { createContext, useContext, type ReactNode } from 'react';

// Two readers of the same query can still paint different numbers: one that re-renders for another reason (the status
// panel, on its own poll) reads the query's newest data before the other is told of it. One reader, one number.
const PendingCount = createContext<number | undefined>(undefined);

/** Every pending approval of every session, counted; undefined until the list has loaded. */
export function PendingCountProvider({ children }: { children: ReactNode }) {
  const { query, approvals } = useInbox();
  return <PendingCount.Provider value={query.data ? approvals.length : undefined}>{children}</PendingCount.Provider>;
}

export const usePendingCount = () => useContext(PendingCount);
