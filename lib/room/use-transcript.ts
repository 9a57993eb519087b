// A session's transcript: chat.history pages (newest first on the wire) flattened oldest → newest.
import { useTRPC } from '@/lib/trpc/client';
import { errorCode, type HistoryPage, type TranscriptMessage } from '@/lib/trpc/types';
import type { InfiniteData } from '@tanstack/react-query';
import { useInfiniteQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { browserRetry } from '@/lib/trpc/query-client';
import { historyInput, historyPaging } from './queries';

export type HistoryData = InfiniteData<HistoryPage, string | null | undefined>;

/** Oldest → newest, one row per id, whatever order pages were loaded or merged in. */
export function flattenHistory(data: HistoryData | undefined): TranscriptMessage[] {
  if (!data) return [];
  const seen = new Map<number, TranscriptMessage>();
  for (const page of data.pages) for (const m of page.messages) seen.set(m.id, m);
  return [...seen.values()].sort((a, b) => a.id - b.id);
}

/** Adds a row announced by a `message` event to the newest page (no-op when it is already there). */
export function mergeMessage(data: HistoryData | undefined, msg: TranscriptMessage): HistoryData {
  if (!data || data.pages.length === 0) {
    return { pages: [{ messages: [msg], next_cursor: null }], pageParams: [undefined] };
  }
  if (data.pages.some((p) => p.messages.some((m) => m.id === msg.id))) return data;
  const [first, ...rest] = data.pages;
  const messages = [msg, ...first!.messages].sort((a, b) => b.id - a.id);
  return { ...data, pages: [{ ...first!, messages }, ...rest] };
}

/** The transcript query's options, shared by the pane and the prefetches (same key, same retry rule). */
export function transcriptQueryOptions(trpc: ReturnType<typeof useTRPC>, sessionKey: string) {
  return trpc.chat.history.infiniteQueryOptions(historyInput(sessionKey), {
    ...historyPaging,
    // A session that has no row yet is simply empty; the first message creates it.
    retry: (count, err) => errorCode(err) !== 'unknown_session' && browserRetry(count, err),
    // Events only flow while a session is open: coming back to one refetches what happened meanwhile.
    staleTime: 0,
  });
}

export function useTranscript(sessionKey: string) {
  const trpc = useTRPC();
  const query = useInfiniteQuery(transcriptQueryOptions(trpc, sessionKey));
  const messages = useMemo(() => flattenHistory(query.data as HistoryData | undefined), [query.data]);
  const missing = errorCode(query.error) === 'unknown_session';
  return { ...query, messages, missing };
}
