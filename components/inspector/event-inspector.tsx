'use client';
// The event inspector: the open session's raw agent events (stream, phase, seq) as they arrive, pausable and filterable.
import { cn } from '@/lib/cn';
import { compactJson, truncate } from '@/lib/format';
import { eventPhase, filterEvents, useEventLog } from '@/lib/room/event-log';
import type { AgentEvent } from '@/lib/trpc/types';
import { useRoomStore } from '@/stores/room-store-provider';
import { useMemo } from 'react';
import { Badge, type BadgeTone } from '../ui/badge';
import { Button } from '../ui/button';
import { CodeBlock } from '../ui/code-block';
import { TextInput } from '@/components/ui/text-input';

const STREAMS = ['lifecycle', 'tool', 'assistant', 'approval', 'message', 'compaction', 'error'] as const;
const TONE: Record<string, BadgeTone> = { lifecycle: 'info', tool: 'warning', approval: 'danger', message: 'success', error: 'danger' };

export function EventInspector({ sessionKey }: { sessionKey: string }) {
  const log = useEventLog(sessionKey);
  const inspector = useRoomStore((s) => s.inspector);
  const setInspector = useRoomStore((s) => s.setInspector);
  const closePanel = useRoomStore((s) => s.closePanel);
  // Paused: show what was there at the moment of pausing; the buffer keeps filling behind it.
  const upTo = inspector.paused ? inspector.pausedAt : null;
  const visibleLog = useMemo(() => (upTo === null ? log : log.filter((e) => e.id <= upTo)), [log, upTo]);
  const shown = useMemo(() => filterEvents(visibleLog, inspector.streams, inspector.text), [visibleLog, inspector.streams, inspector.text]);
  const newer = log.length - visibleLog.length;

  const toggleStream = (s: string) =>
    setInspector({ streams: inspector.streams.includes(s) ? inspector.streams.filter((x) => x !== s) : [...inspector.streams, s] });

  return (
    <section aria-labelledby="inspector-heading" data-testid="event-inspector" className="flex min-h-0 flex-1 flex-col">
      <header className="flex shrink-0 items-center gap-2 border-b border-zinc-200 px-3 py-2 dark:border-zinc-800">
        <h2 id="inspector-heading" className="text-sm font-semibold">
          Event inspector
        </h2>
        <Badge>{shown.length}</Badge>
        {inspector.paused && newer > 0 && (
          <span data-testid="inspector-newer" className="text-[11px] text-amber-700 dark:text-amber-300">
            {newer} new
          </span>
        )}
        <div className="ml-auto flex gap-1">
          <Button size="sm" aria-pressed={inspector.paused} onClick={() => setInspector({ paused: !inspector.paused, pausedAt: log[log.length - 1]?.id ?? 0 })}>
            {inspector.paused ? 'Resume events' : 'Pause events'}
          </Button>
          <Button size="sm" variant="ghost" aria-label="Close event inspector" onClick={closePanel}>
            ✕
          </Button>
        </div>
      </header>
      <div className="shrink-0 space-y-1.5 border-b border-zinc-200 px-3 py-2 dark:border-zinc-800">
        <TextInput
          type="search"
          aria-label="Filter events"
          placeholder="Filter: run id, phase, text…"
          value={inspector.text}
          onChange={(e) => setInspector({ text: e.target.value })}
          size="sm"
          className="w-full"
        />
        <div role="group" aria-label="Streams" className="flex flex-wrap gap-1">
          {STREAMS.map((s) => (
            <button
              key={s}
              type="button"
              aria-pressed={inspector.streams.includes(s)}
              onClick={() => toggleStream(s)}
              className={cn(
                'rounded-full border px-2 py-0.5 text-[11px]',
                inspector.streams.includes(s)
                  ? 'border-indigo-500 bg-indigo-50 text-indigo-900 dark:bg-indigo-950 dark:text-indigo-100'
                  : 'border-zinc-300 text-zinc-600 dark:border-zinc-700 dark:text-zinc-400',
              )}
            >
              {s}
            </button>
          ))}
        </div>
      </div>
      <ol aria-label="Agent events" data-testid="event-list" className="min-h-0 flex-1 divide-y divide-zinc-100 overflow-y-auto font-mono text-[11px] dark:divide-zinc-900">
        {shown.length === 0 && <li className="px-3 py-6 text-center font-sans text-xs text-zinc-500">No events yet. They stream in while the session runs.</li>}
        {[...shown].reverse().map((ev) => (
          <EventRow key={ev.id} ev={ev} />
        ))}
      </ol>
    </section>
  );
}

function EventRow({ ev }: { ev: AgentEvent }) {
  const phase = eventPhase(ev);
  const traceId = typeof ev.data.traceId === 'string' ? ev.data.traceId : undefined;
  return (
    <li data-testid="event-row" data-stream={ev.stream} data-phase={phase} data-seq={ev.seq} data-event-id={ev.id} data-trace-id={traceId}>
      <details className="group">
        <summary className="flex cursor-pointer list-none items-center gap-1.5 px-3 py-1">
          <span className="w-10 shrink-0 text-right text-zinc-400" title="event id">
            {ev.id}
          </span>
          <Badge tone={TONE[ev.stream] ?? 'neutral'}>{ev.stream}</Badge>
          {phase && <span className="text-zinc-700 dark:text-zinc-300">{phase}</span>}
          <span className="text-zinc-400" title="per-run sequence">
            #{ev.seq}
          </span>
          {traceId && (
            <span data-testid="event-trace-id" className="shrink-0 text-indigo-600 dark:text-indigo-300" title={`trace ${traceId}`}>
              trace {traceId.slice(0, 8)}
            </span>
          )}
          <span className="min-w-0 flex-1 truncate text-zinc-500">{truncate(compactJson(ev.data), 120)}</span>
        </summary>
        <div className="px-3 pb-2">
          <p className="mb-1 text-zinc-500">
            run {ev.runId} · {ev.ts}
            {traceId && <> · trace {traceId}</>}
          </p>
          <CodeBlock text={JSON.stringify(ev.data, null, 2)} label={`Event ${ev.id} data`} maxHeight="max-h-48" />
        </div>
      </details>
    </li>
  );
}
