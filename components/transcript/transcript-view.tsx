'use client';
// The session transcript: history pages (older ones on demand), live rows, and the streaming assistant bubble.
import { useLiveState } from '@/lib/room/use-live-state';
import { useTranscript } from '@/lib/room/use-transcript';
import { useTRPC } from '@/lib/trpc/client';
import { useQuery } from '@tanstack/react-query';
import { useLayoutEffect, useRef } from 'react';
import { Button } from '../ui/button';
import { Bubble, MessageRow } from './message-row';

const STICK_PX = 96;

export function TranscriptView({ sessionKey }: { sessionKey: string }) {
  const trpc = useTRPC();
  const transcript = useTranscript(sessionKey);
  const live = useLiveState(sessionKey);
  const agents = useQuery(trpc.agents.list.queryOptions({}, { staleTime: 5 * 60_000 }));
  const agentId = sessionKey.split(':')[1] ?? '';
  const agentName = agents.data?.agents.find((a) => a.agentId === agentId)?.name ?? agentId;

  const scroller = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);
  const olderAnchor = useRef<{ height: number; top: number } | null>(null);

  const pending = Object.entries(live.pending).filter(([, text]) => text.length > 0);
  const errors = Object.entries(live.errors);
  const pendingLength = pending.reduce((n, [, t]) => n + t.length, 0);

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
  }, [transcript.messages, pendingLength, errors.length]);

  const loadOlder = () => {
    const el = scroller.current;
    if (el) olderAnchor.current = { height: el.scrollHeight, top: el.scrollTop };
    void transcript.fetchNextPage();
  };

  return (
    <div
      ref={scroller}
      data-testid="transcript"
      role="log"
      aria-label="Transcript"
      aria-live="polite"
      // While a reply streams in, screen readers wait for the finished row instead of reading every delta.
      aria-busy={pending.length > 0}
      onScroll={(e) => {
        const el = e.currentTarget;
        atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < STICK_PX;
      }}
      className="min-h-0 flex-1 overflow-y-auto px-4 py-4"
    >
      <div className="flex flex-col gap-3">
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
        {!transcript.isPending && transcript.messages.length === 0 && pending.length === 0 && (
          <p data-testid="transcript-empty" className="py-10 text-center text-sm text-zinc-500">
            No messages yet. Say something to <span className="font-mono">{agentId}</span>.
          </p>
        )}
        {transcript.messages.map((m) => (
          <MessageRow key={m.id} message={m} />
        ))}
        {pending.map(([runId, text]) => (
          <Bubble key={runId} side="left" tone="assistant" who={agentName} meta="typing…" testId="pending-bubble" pending>
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
