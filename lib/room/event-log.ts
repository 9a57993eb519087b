// The event inspector's buffer: the newest raw agent events of a session (bounded, no duplicates), and its filter.
import type { AgentEvent } from '@/lib/trpc/types';
import type { QueryClient } from '@tanstack/react-query';
import { useQuery } from '@tanstack/react-query';

export const EVENT_LOG_MAX = 1000;

export const eventLogKey = (sessionKey: string) => ['crosstalk', 'event-log', sessionKey] as const;

/** Appends in id order; a replayed id is dropped, the oldest fall off past `max`. */
export function appendEvent(log: readonly AgentEvent[], ev: AgentEvent, max = EVENT_LOG_MAX): readonly AgentEvent[] {
  const last = log[log.length - 1];
  if (last && ev.id <= last.id) return log;
  const next = log.length >= max ? log.slice(log.length - max + 1) : log.slice();
  next.push(ev);
  return next;
}

export function eventPhase(ev: AgentEvent): string | undefined {
  const p = ev.data?.phase;
  return typeof p === 'string' ? p : undefined;
}

/** Streams (empty = all) and a free-text match over run id, phase and the JSON data. */
export function filterEvents(log: readonly AgentEvent[], streams: readonly string[], text: string): AgentEvent[] {
  const q = text.trim().toLowerCase();
  return log.filter((ev) => {
    if (streams.length > 0 && !streams.includes(ev.stream)) return false;
    if (!q) return true;
    return `${ev.runId} ${ev.stream} ${eventPhase(ev) ?? ''} ${JSON.stringify(ev.data)}`.toLowerCase().includes(q);
  });
}

export function recordEvent(qc: QueryClient, sessionKey: string, ev: AgentEvent): void {
  qc.setQueryData<readonly AgentEvent[]>(eventLogKey(sessionKey), (old) => appendEvent(old ?? [], ev));
}

export function useEventLog(sessionKey: string): readonly AgentEvent[] {
  const { data } = useQuery<readonly AgentEvent[]>({
    queryKey: eventLogKey(sessionKey),
    // Only the subscription writes this entry.
    queryFn: () => [],
    initialData: [],
    staleTime: Infinity,
    gcTime: 10 * 60_000,
  });
  return data;
}
