// Unit tests for the event inspector's bounded buffer and filter.
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '@/lib/trpc/types';
import { appendEvent, filterEvents } from './event-log';

const ev = (id: number, stream: AgentEvent['stream'], data: Record<string, unknown> = {}): AgentEvent => ({
  id,
  runId: 'run_a',
  seq: id,
  stream,
  ts: new Date(0).toISOString(),
  sessionKey: 'agent:main:main',
  data,
});

describe('event log', () => {
  it('appends in order, drops replays, and keeps the newest', () => {
    let log: readonly AgentEvent[] = [];
    for (const id of [1, 2, 2, 1, 3, 4, 5]) log = appendEvent(log, ev(id, 'assistant'), 3);
    expect(log.map((e) => e.id)).toEqual([3, 4, 5]);
  });

  it('filters by stream and text', () => {
    const log = [ev(1, 'lifecycle', { phase: 'start' }), ev(2, 'tool', { phase: 'start', name: 'exec' }), ev(3, 'assistant', { delta: 'hi' })];
    expect(filterEvents(log, ['tool'], '').map((e) => e.id)).toEqual([2]);
    expect(filterEvents(log, [], 'exec').map((e) => e.id)).toEqual([2]);
    expect(filterEvents(log, ['lifecycle', 'assistant'], 'START').map((e) => e.id)).toEqual([1]);
  });
});
