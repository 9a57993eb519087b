// Unit tests for folding agent events into the room's live state.
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '@/lib/trpc/types';
import { applyLiveEvent, emptyLiveState, isFailedResult, type LiveState } from './live-state';

let seq = 0;
const ev = (id: number, stream: AgentEvent['stream'], data: Record<string, unknown>, runId = 'run_1'): AgentEvent => ({
  id,
  runId,
  seq: ++seq,
  stream,
  ts: new Date(0).toISOString(),
  sessionKey: 'agent:main:main',
  data,
});

const fold = (events: AgentEvent[], from: LiveState = emptyLiveState()) => events.reduce(applyLiveEvent, from);

describe('applyLiveEvent', () => {
  it('streams assistant deltas into a pending bubble until the row is written', () => {
    const s = fold([ev(1, 'lifecycle', { phase: 'start' }), ev(2, 'assistant', { delta: 'echo: ' }), ev(3, 'assistant', { delta: 'hi' })]);
    expect(s.activeRuns).toEqual(['run_1']);
    expect(s.pending).toEqual({ run_1: 'echo: hi' });
    const written = applyLiveEvent(s, ev(4, 'message', { message: { id: 9, role: 'assistant', runId: 'run_1' } }));
    expect(written.pending).toEqual({});
    const ended = applyLiveEvent(written, ev(5, 'lifecycle', { phase: 'end' }));
    expect(ended.activeRuns).toEqual([]);
  });

  it('ignores replayed events (id not above the last one)', () => {
    const s = fold([ev(1, 'assistant', { delta: 'a' }), ev(2, 'assistant', { delta: 'b' })]);
    expect(applyLiveEvent(s, ev(2, 'assistant', { delta: 'b' }))).toBe(s);
    expect(applyLiveEvent(s, ev(1, 'assistant', { delta: 'a' })).pending.run_1).toBe('ab');
  });

  it('tracks tool calls from start to end and keeps the end state', () => {
    const s = fold([
      ev(1, 'tool', { phase: 'start', name: 'exec', callId: 'c1', args: { command: 'ls' } }),
      ev(2, 'tool', { phase: 'end', name: 'exec', callId: 'c1', status: 'ok', result: { status: 'ok', exitCode: 0 } }),
      ev(3, 'tool', { phase: 'update', name: 'exec', callId: 'c1' }),
    ]);
    expect(s.tools.c1).toMatchObject({ phase: 'end', args: { command: 'ls' }, result: { status: 'ok' }, status: 'ok', eventId: 1 });
  });

  it('remembers which call an approval paused, and run errors', () => {
    const s = fold([
      ev(1, 'approval', { phase: 'requested', approvalId: 'a1', callId: 'c1', tool: 'exec' }),
      ev(2, 'lifecycle', { phase: 'error', error: 'boom' }),
    ]);
    expect(s.approvalCalls).toEqual({ a1: 'c1' });
    expect(s.errors).toEqual({ run_1: 'boom' });
  });
});

describe('isFailedResult', () => {
  it('flags refusals, errors and non-zero exits', () => {
    expect(isFailedResult({ status: 'denied', reason: 'no' })).toBe(true);
    expect(isFailedResult({ status: 'error', error: { code: 'timeout' } })).toBe(true);
    expect(isFailedResult({ status: 'ok', exitCode: 2 })).toBe(true);
    expect(isFailedResult({ status: 'ok', exitCode: 0 })).toBe(false);
    expect(isFailedResult('text')).toBe(false);
  });
});
