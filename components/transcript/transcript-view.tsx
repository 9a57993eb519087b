'use client';
// The session transcript: history pages (older ones on scroll, by cursor), live rows, the streaming assistant bubble;
// long transcripts are virtualized and the view sticks to the bottom while the reader is there.
import { errorText } from '@/lib/room/connection-text';
import { useLiveState } from '@/lib/room/use-live-state';
import { useTranscript } from '@/lib/room/use-transcript';
import { useTRPC } from '@/lib/trpc/client';
import type { TranscriptMessage } from '@/lib/trpc/types';
import { useRoomStore } from '@/stores/room-store-provider';
import { useQuery } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import { memo, useEffect, useLayoutEffect, useMemo, useRef, useState, type ReactNode, type RefObject } from 'react';
import { Button } from '../ui/button';
import { ServerPlainMarkdown } from './markdown';
import { Bubble, MessageRow } from './message-row';
import { mergeToolRows, ToolCallsProvider } from './tool-calls-context';

const STICK_PX = 96;
/** Within this distance of the top, scrolling up fetches the next older page. */
const LOAD_OLDER_PX = 400;
/** Short transcripts render every row (find-in-page works); longer ones only what is on screen. */
export const VIRTUALIZE_AFTER = 200;
/** The newest rows whose Markdown the page's server render parses (~1–6 ms a reply with code or a table). Older rows: rich once hydrated. */
export const SERVER_RICH_ROWS = 6;

// Memoized: the pane re-renders for its other queries (approvals, usage) without re-rendering every row here.
export const TranscriptView = memo(function TranscriptView({ sessionKey }: { sessionKey: string }) {
  const trpc = useTRPC();
  const transcript = useTranscript(sessionKey);
  const live = useLiveState(sessionKey);
  const agents = useQuery(trpc.agents.list.queryOptions({}, { staleTime: 5 * 60_000 }));
  const agentId = sessionKey.split(':')[1] ?? '';
  const agentName = agents.data?.agents.find((a) => a.agentId === agentId)?.name ?? agentId;

  const scroller = useRef<HTMLDivElement>(null);
  const content = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);
  const lastTop = useRef(0);
  const olderAnchor = useRef<{ height: number; top: number } | null>(null);

  const rows = transcript.messages;
  const shown = useMemo(() => mergeToolRows(rows), [rows]);
  const focusTarget = useFocusTarget(sessionKey, rows, shown, transcript, atBottom);
  const pending = Object.entries(live.pending).filter(([, text]) => text.length > 0);
  const errors = Object.entries(live.errors);

  useLayoutEffect(() => {
    atBottom.current = true;
  }, [sessionKey]);

  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    if (olderAnchor.current) {
      // Older rows were prepended: keep the rows the reader was looking at in place.
      el.scrollTop = el.scrollHeight - olderAnchor.current.height + olderAnchor.current.top;
      olderAnchor.current = null;
    } else if (atBottom.current) {
      el.scrollTop = el.scrollHeight;
    }
    lastTop.current = el.scrollTop;
  }, [rows]);

  // Anything that grows the content (streamed deltas, measured rows, an opened card) keeps a reader at the bottom there.
  useLayoutEffect(() => {
    const el = scroller.current;
    const inner = content.current;
    if (!el || !inner || typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(() => {
      if (atBottom.current && !olderAnchor.current) el.scrollTop = el.scrollHeight;
    });
    ro.observe(inner);
    return () => ro.disconnect();
  }, []);

  const loadOlder = () => {
    if (!transcript.hasNextPage || transcript.isFetchingNextPage) return;
    const el = scroller.current;
    if (el) olderAnchor.current = { height: el.scrollHeight, top: el.scrollTop };
    void transcript.fetchNextPage();
  };

  return (
    <div
      ref={scroller}
      data-testid="transcript"
      data-rows={rows.length}
      data-virtualized={shown.length > VIRTUALIZE_AFTER ? 'true' : undefined}
      role="log"
      aria-label="Transcript"
      aria-live="polite"
      tabIndex={0}
      // While a reply streams in, screen readers wait for the finished row instead of reading every delta.
      aria-busy={pending.length > 0}
      onScroll={(e) => {
        const el = e.currentTarget;
        atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < STICK_PX;
        const up = el.scrollTop < lastTop.current;
        lastTop.current = el.scrollTop;
        if (up && el.scrollTop < LOAD_OLDER_PX) loadOlder();
      }}
      className="relative min-h-0 flex-1 overflow-y-auto px-3 py-4 [overflow-anchor:none] focus-visible:outline-2 focus-visible:-outline-offset-2 focus-visible:outline-indigo-500 sm:px-4"
    >
      <div ref={content} className="flex flex-col gap-3">
        {transcript.hasNextPage && (
          <div className="flex justify-center">
            <Button size="sm" variant="ghost" onClick={loadOlder} disabled={transcript.isFetchingNextPage} data-testid="load-older">
              {transcript.isFetchingNextPage ? 'Loading…' : 'Load older messages'}
            </Button>
          </div>
        )}
        {transcript.isPending && !transcript.missing && <p className="text-center text-sm text-zinc-500">Loading transcript…</p>}
        {transcript.isError && !transcript.missing && (
          <p role="alert" className="text-center text-sm text-rose-600">
            Could not load the transcript: {errorText(transcript.error)}
          </p>
        )}
        {!transcript.isPending && rows.length === 0 && pending.length === 0 && (
          <p data-testid="transcript-empty" className="py-10 text-center text-sm text-zinc-500">
            No messages yet. Say something to <span className="font-mono">{agentId}</span>.
          </p>
        )}
        <ToolCallsProvider sessionKey={sessionKey} rows={rows}>
          {shown.length > VIRTUALIZE_AFTER ? (
            <VirtualRows rows={shown} scroller={scroller} focusedId={focusTarget} />
          ) : (
            shown.map((m, i) => (
              <ServerPlainMarkdown key={m.id} value={i < shown.length - SERVER_RICH_ROWS}>
                <TranscriptRow message={m} focused={focusTarget === m.id} scrollTo={focusTarget === m.id} />
              </ServerPlainMarkdown>
            ))
          )}
        </ToolCallsProvider>
        {pending.map(([runId, text]) => (
          <Bubble key={runId} side="left" tone="assistant" who={agentName} meta="typing…" testId="pending-bubble" pending markdown>
            {text}
          </Bubble>
        ))}
        {errors.map(([runId, error]) => (
          error === 'cancelled' || error === 'interrupted' ? (
            <p key={runId} role="status" data-testid={`run-${error}`} className="mx-auto max-w-3xl text-center text-xs text-zinc-500">
              ■ Run {error}
            </p>
          ) : (
            <p key={runId} role="alert" data-testid="run-error" className="mx-auto max-w-3xl text-center text-xs text-rose-600">
              Run failed: {error}
            </p>
          )
        ))}
      </div>
    </div>
  );
});

/**
 * A search result to open (the store's `focus`): pages older rows in until the message is loaded, then marks it (a
 * result row merged into its call's card marks the card). Returns the id of the row to scroll to and highlight.
 */
function useFocusTarget(
  sessionKey: string,
  rows: readonly TranscriptMessage[],
  shown: readonly TranscriptMessage[],
  transcript: ReturnType<typeof useTranscript>,
  atBottom: RefObject<boolean>,
): number | null {
  const focus = useRoomStore((s) => s.focus);
  const clearFocus = useRoomStore((s) => s.clearFocus);
  const [target, setTarget] = useState<number | null>(null);
  const { isPending, hasNextPage, isFetchingNextPage, fetchNextPage } = transcript;
  useEffect(() => {
    if (!focus || focus.sessionKey !== sessionKey || isPending) return;
    const row = rows.find((r) => r.id === focus.messageId);
    if (!row) {
      const oldest = rows[0]?.id;
      if (hasNextPage && (oldest === undefined || oldest > focus.messageId)) {
        if (!isFetchingNextPage) void fetchNextPage();
        return;
      }
      clearFocus(); // not in this transcript (deleted meanwhile)
      return;
    }
    const card = row.kind === 'tool_result' && !shown.includes(row) ? shown.find((r) => r.kind === 'tool_call' && r.tool?.callId === row.tool?.callId) : undefined;
    atBottom.current = false;
    setTarget((card ?? row).id);
    clearFocus();
  }, [focus, sessionKey, rows, shown, isPending, hasNextPage, isFetchingNextPage, fetchNextPage, clearFocus, atBottom]);
  return target;
}

/**
 * One row, memoized: a streamed delta or a poll re-renders the transcript, not each row (a row's message object stays
 * the same while it is unchanged; tool cards still follow their call through the ToolCallsProvider context).
 */
const TranscriptRow = memo(function TranscriptRow({ message, focused, scrollTo }: { message: TranscriptMessage; focused: boolean; scrollTo: boolean }) {
  return (
    <RowFrame id={message.id} focused={focused} scrollTo={scrollTo}>
      <MessageRow message={message} />
    </RowFrame>
  );
});

/** A transcript row's frame: its message id (for search results) and the highlight of the row a result opened. */
function RowFrame({ id, focused, scrollTo, children }: { id: number; focused: boolean; scrollTo: boolean; children: ReactNode }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (scrollTo) ref.current?.scrollIntoView({ block: 'center' });
  }, [scrollTo]);
  return (
    <div ref={ref} data-message-id={id} data-focused={focused ? 'true' : undefined} className={focused ? 'rounded-lg ring-2 ring-amber-400 ring-offset-2 dark:ring-offset-zinc-950' : undefined}>
      {children}
    </div>
  );
}

/** Only the rows near the viewport are in the DOM; each is measured once rendered (rows differ a lot in height). */
function VirtualRows({ rows, scroller, focusedId }: { rows: TranscriptMessage[]; scroller: RefObject<HTMLDivElement | null>; focusedId: number | null }) {
  const list = useRef<HTMLDivElement>(null);
  const [margin, setMargin] = useState(0);
  useLayoutEffect(() => {
    if (list.current) setMargin(list.current.offsetTop);
  });
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => 76,
    overscan: 10,
    scrollMargin: margin,
    getItemKey: (i) => rows[i]!.id,
  });
  const items = virtualizer.getVirtualItems();
  useEffect(() => {
    const i = focusedId === null ? -1 : rows.findIndex((r) => r.id === focusedId);
    if (i >= 0) virtualizer.scrollToIndex(i, { align: 'center' });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [focusedId]);
  return (
    <div ref={list} data-testid="virtual-rows" style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
      {items.map((vi) => (
        <div
          key={vi.key}
          ref={virtualizer.measureElement}
          data-index={vi.index}
          className="absolute top-0 left-0 w-full pb-3"
          style={{ transform: `translateY(${vi.start - margin}px)` }}
        >
          <TranscriptRow message={rows[vi.index]!} focused={focusedId === rows[vi.index]!.id} scrollTo={false} />
        </div>
      ))}
    </div>
  );
}
