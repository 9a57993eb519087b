'use client';
// The session transcript: history pages (older ones on scroll, by cursor), live rows, the streaming assistant bubble;
// long transcripts are virtualized and the view sticks to the bottom while the reader is there.
import { useLiveState } from '@/lib/room/use-live-state';
import { useTranscript } from '@/lib/room/use-transcript';
import { useTRPC } from '@/lib/trpc/client';
import type { TranscriptMessage } from '@/lib/trpc/types';
import { useQuery } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useLayoutEffect, useMemo, useRef, useState, type RefObject } from 'react';
import { Button } from '../ui/button';
import { Bubble, MessageRow } from './message-row';
import { mergeToolRows, ToolCallsProvider } from './tool-calls-context';

const STICK_PX = 96;
/** Within this distance of the top, scrolling up fetches the next older page. */
const LOAD_OLDER_PX = 400;
/** Short transcripts render every row (find-in-page works); longer ones only what is on screen. */
export const VIRTUALIZE_AFTER = 200;

export function TranscriptView({ sessionKey }: { sessionKey: string }) {
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
            Could not load the transcript: {transcript.error.message}
          </p>
        )}
        {!transcript.isPending && rows.length === 0 && pending.length === 0 && (
          <p data-testid="transcript-empty" className="py-10 text-center text-sm text-zinc-500">
            No messages yet. Say something to <span className="font-mono">{agentId}</span>.
          </p>
        )}
        <ToolCallsProvider sessionKey={sessionKey} rows={rows}>
          {shown.length > VIRTUALIZE_AFTER ? (
            <VirtualRows rows={shown} scroller={scroller} />
          ) : (
            shown.map((m) => <MessageRow key={m.id} message={m} />)
          )}
        </ToolCallsProvider>
        {pending.map(([runId, text]) => (
          <Bubble key={runId} side="left" tone="assistant" who={agentName} meta="typing…" testId="pending-bubble" pending markdown>
            {text}
          </Bubble>
        ))}
        {errors.map(([runId, error]) => (
          <p key={runId} role="alert" data-testid="run-error" className="mx-auto max-w-3xl text-center text-xs text-rose-600">
            Run failed: {error}
          </p>
        ))}
      </div>
    </div>
  );
}

/** Only the rows near the viewport are in the DOM; each is measured once rendered (rows differ a lot in height). */
function VirtualRows({ rows, scroller }: { rows: TranscriptMessage[]; scroller: RefObject<HTMLDivElement | null> }) {
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
          <MessageRow message={rows[vi.index]!} />
        </div>
      ))}
    </div>
  );
}
