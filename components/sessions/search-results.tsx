'use client';
// Transcript search results under the sidebar's searchbox (sessions.search): snippet, session and kind; a click opens
// the session scrolled to that message; "More results" pages on with the search's cursor.
import { errorText } from '@/lib/room/connection-text';
import { useTRPC } from '@/lib/trpc/client';
import { useRoomStore } from '@/stores/room-store-provider';
import { keepPreviousData, useInfiniteQuery } from '@tanstack/react-query';
import { useEffect, useRef, useState, type ReactNode } from 'react';

/** Typing settles for this long before the server is asked. */
const DEBOUNCE_MS = 200;
/** Results per page (CONTRACT §3 sessions.search `limit`); "More results" asks for the next page by its cursor. */
export const SEARCH_PAGE = 20;

function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}

/** The snippet with the query's words marked (text only: nothing from a transcript is parsed as HTML). */
function highlight(snippet: string, query: string): ReactNode[] {
  const words = (query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length > 1);
  if (!words.length) return [snippet];
  const re = new RegExp(`(${words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})`, 'giu');
  return snippet.split(re).map((part, i) => (i % 2 === 1 ? <mark key={i} className="rounded-sm bg-amber-200 px-0.5 text-inherit dark:bg-amber-700/60">{part}</mark> : part));
}

export function SearchResults({ query }: { query: string }) {
  const trpc = useTRPC();
  const openAt = useRoomStore((s) => s.openAt);
  const typed = query.trim();
  const q = useDebounced(typed, DEBOUNCE_MS);
  const enabled = q.length >= 2;
  const search = useInfiniteQuery(
    trpc.sessions.search.infiniteQueryOptions(
      { query: q, limit: SEARCH_PAGE },
      { enabled, placeholderData: keepPreviousData, staleTime: 10_000, getNextPageParam: (last) => last.next_cursor ?? undefined },
    ),
  );
  // The query the shown results answer: while the next one debounces or is asked (the previous results stay, as a
  // placeholder), they keep their own words marked and show as stale, not the new words over old snippets.
  const answered = useRef(q);
  if (search.data && !search.isPlaceholderData) answered.current = q;
  if (!enabled || typed.length < 2) return null;
  const stale = !!search.data && (search.isPlaceholderData || typed !== q);
  const results = search.data?.pages.flatMap((p) => p.results) ?? [];
  return (
    <section
      aria-label="Search results"
      aria-busy={stale || search.isFetching}
      data-testid="search-results"
      data-stale={stale}
      data-query={answered.current}
      className="max-h-[40dvh] overflow-y-auto rounded-md border border-zinc-200 bg-white dark:border-zinc-700 dark:bg-zinc-950"
    >
      <h2 className="sticky top-0 bg-white px-2 pt-1.5 pb-1 text-[11px] font-semibold text-zinc-500 uppercase dark:bg-zinc-950">
        Messages {(search.isFetching || stale) && <span className="font-normal normal-case">· searching…</span>}
      </h2>
      {search.isError && <p className="px-2 pb-2 text-xs text-rose-600">Search failed: {errorText(search.error)}</p>}
      {search.isSuccess && !stale && results.length === 0 && <p className="px-2 pb-2 text-xs text-zinc-500">No messages match.</p>}
      <ul className={stale ? 'opacity-60 transition-opacity' : undefined}>
        {results.map((r) => (
          <li key={r.messageId}>
            <button
              type="button"
              data-testid="search-result"
              data-session-key={r.sessionKey}
              data-message-id={r.messageId}
              onClick={() => openAt(r.sessionKey, r.messageId)}
              className="block w-full border-t border-zinc-100 px-2 py-1.5 text-left hover:bg-zinc-100 dark:border-zinc-800 dark:hover:bg-zinc-800"
            >
              <span className="block truncate font-mono text-[10px] text-zinc-500">
                {r.sessionKey} · {r.kind === 'message' ? r.role : r.kind}
              </span>
              <span data-testid="search-snippet" className="line-clamp-2 text-xs break-words">
                {highlight(r.snippet, answered.current)}
              </span>
            </button>
          </li>
        ))}
      </ul>
      {search.hasNextPage && !stale && (
        <button
          type="button"
          data-testid="search-more"
          disabled={search.isFetchingNextPage}
          onClick={() => void search.fetchNextPage()}
          className="block w-full border-t border-zinc-100 px-2 py-1.5 text-center text-xs text-indigo-700 hover:bg-zinc-100 disabled:text-zinc-400 dark:border-zinc-800 dark:text-indigo-300 dark:hover:bg-zinc-800"
        >
          {search.isFetchingNextPage ? 'Loading more…' : 'More results'}
        </button>
      )}
    </section>
  );
}
