// Unit tests for the toolbox model: tool rows + live events + pending approvals.
import { describe, expect, it } from 'vitest';
import type { PendingApproval, TranscriptMessage } from '@/lib/trpc/types';
import { applyLiveEvent, emptyLiveState } from './live-state';
import { deriveToolbox } from './tool-calls';

const row = (id: number, kind: 'tool_call' | 'tool_result', callId: string, extra: Partial<TranscriptMessage['tool']> = {}): TranscriptMessage => ({
  id,
  sessionKey: 'agent:main:main',
  role: kind === 'tool_call' ? 'assistant' : 'tool',
  kind,
  content: '',
  createdAt: new Date(0).toISOString(),
  runId: 'run_1',
  author: { type: 'agent', id: 'main' },
  tool: { name: 'exec', callId, ...extra },
});

const approval = (approvalId: string, command: string, requestedAt = '2025-01-01T00:00:00.000Z'): PendingApproval => ({
  approvalId,
  kind: 'tool',
  sessionKey: 'agent:main:main',
  runId: 'run_1',
  callId: `missing-${approvalId}`,
  tool: 'exec',
  args: { command },
  requestedAt,
});

describe('deriveToolbox', () => {
  it('merges rows into calls with done/failed/denied/interrupted/running states', () => {
    const { calls } = deriveToolbox(
      [
        row(1, 'tool_call', 'c1', { args: { command: 'a' } }),
        row(2, 'tool_result', 'c1', { result: { status: 'ok', exitCode: 0 } }),
        row(3, 'tool_call', 'c2', { args: { command: 'b' } }),
        row(4, 'tool_result', 'c2', { result: { status: 'denied', reason: 'no' } }),
        row(5, 'tool_call', 'c3', { args: { command: 'c' } }),
        row(6, 'tool_call', 'c4', { args: { command: 'd' } }),
        row(7, 'tool_result', 'c4', { result: { status: 'error', error: { code: 'interrupted', message: 'x' } } }),
        row(8, 'tool_call', 'c5', { args: { command: 'e' } }),
        row(9, 'tool_result', 'c5', { result: { status: 'ok', exitCode: 2 } }),
      ],
      emptyLiveState(),
      [],
    );
    expect(calls.map((c) => [c.callId, c.status])).toEqual([
      ['c1', 'done'],
      ['c2', 'denied'],
      ['c3', 'running'],
      ['c4', 'interrupted'],
      ['c5', 'failed'],
    ]);
  });

  it('marks unfinished calls of a finished run as interrupted, not running', () => {
    const rows = [row(1, 'tool_call', 'c1', { args: { command: 'a' } })];
    expect(deriveToolbox(rows, emptyLiveState(), [], false).calls[0]!.status).toBe('interrupted');
    expect(deriveToolbox(rows, emptyLiveState(), [], true).calls[0]!.status).toBe('running');
    const live = { ...emptyLiveState(), activeRuns: ['run_1'] };
    expect(deriveToolbox(rows, live, [], false).calls[0]!.status).toBe('running');
  });

  it('orders same-instant approvals by their calls, matching by arguments', () => {
    const rows = [row(1, 'tool_call', 'c1', { args: { command: 'one' } }), row(2, 'tool_call', 'c2', { args: { command: 'two' } })];
    // The server lists them in arbitrary order when requested in the same millisecond.
    const { calls, approvals } = deriveToolbox(rows, emptyLiveState(), [approval('z', 'one'), approval('a', 'two')].reverse());
    expect(approvals.map((a) => a.approvalId)).toEqual(['z', 'a']);
    expect(calls.every((c) => c.status === 'waiting')).toBe(true);
  });

  it('uses the call id of approvals and lists approvals whose call is not loaded', () => {
    const live = applyLiveEvent(emptyLiveState(), {
      id: 1, runId: 'run_1', seq: 1, stream: 'approval', ts: '', sessionKey: 'agent:main:main',
      data: { phase: 'requested', approvalId: 'a1', callId: 'c2' },
    });
    const rows = [row(1, 'tool_call', 'c1', { args: { command: 'x' } }), row(2, 'tool_call', 'c2', { args: { command: 'x' } })];
    const { calls } = deriveToolbox(rows, live, [{ ...approval('a1', 'x'), callId: 'c2' }, { ...approval('a2', 'other'), tool: 'web_fetch' }]);
    expect(calls.map((c) => [c.callId, c.status])).toEqual([
      ['c1', 'running'],
      ['c2', 'waiting'],
      ['missing-a2', 'waiting'],
    ]);
  });
});
