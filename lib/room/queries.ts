// Query inputs shared by the client hooks and the server prefetch, so both address the same cache entries.
import type { HistoryPage, SessionsPage } from '@/lib/trpc/types';

export const HISTORY_PAGE_SIZE = 50;
export const SESSIONS_PAGE = 100;

export const historyInput = (sessionKey: string) => ({ sessionKey, limit: HISTORY_PAGE_SIZE, includeTools: true });
export const historyPaging = { getNextPageParam: (last: HistoryPage) => last.next_cursor ?? undefined };

export const sessionsListInput = { limit: SESSIONS_PAGE };
export const sessionsPaging = { getNextPageParam: (last: SessionsPage) => last.next_cursor ?? undefined };
