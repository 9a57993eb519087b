// Per-session live state folded from agent events (streaming text, active runs, tool calls) — pure, cache-stored.
import type { AgentEvent } from '@/lib/trpc/types';

export type ToolStatus = 'running' | 'waiting' | 'done' | 'failed' | 'denied' | 'interrupted';

export interface LiveTool {
  callId: string;
  name: string;
  runId: string;
  args?: unknown;
  result?: unknown;
  /** The server's outcome on `end` (e.g. ok, error, denied), when it sends one. */
  status?: string;
  phase: 'start' | 'update' | 'end';
  eventId: number;
  /** Event times of the call's start and end (for its duration). */
  startedAt?: string;
  endedAt?: string;
  /** Who decided the call, from the `end` event (a person, the reviewer, a rule). */
  decided?: DecisionView;
}

/** Who decided a gated call and why (the run loop's `decided` note on the result row and the `tool` `end` event). */
export interface DecisionView {
  decision: string;
  by: { type: string; id?: string; name?: string; channel?: string };
  reason?: string;
}

export interface LiveState {
  /** Highest event id folded in: replays on reconnect never apply twice. */
  lastEventId: number;
  /** Runs that started and have not ended. */
  activeRuns: string[];
  /** Assistant text streamed for the current step of each run, not yet written as a transcript row. */
  pending: Record<string, string>;
  tools: Record<string, LiveTool>;
  /** Last lifecycle error text per run, shown as a notice until the transcript catches up. */
  errors: Record<string, string>;
  /** approvalId → the tool call it paused, from `approval` `requested` events. */
  approvalCalls: Record<string, string>;
}

export const emptyLiveState = (): LiveState => ({ lastEventId: 0, activeRuns: [], pending: {}, tools: {}, errors: {}, approvalCalls: {} });

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

function without<T>(rec: Record<string, T>, key: string): Record<string, T> {
  if (!(key in rec)) return rec;
  const next = { ...rec };
  delete next[key];
  return next;
}

/** Folds one event into the live state; returns the same object when nothing changed. */
export function applyLiveEvent(state: LiveState, ev: AgentEvent): LiveState {
  if (ev.id <= state.lastEventId) return state;
  const s: LiveState = { ...state, lastEventId: ev.id };
  const d = ev.data ?? {};
  switch (ev.stream) {
    case 'lifecycle': {
      const phase = str(d.phase);
      if (phase === 'start') {
        if (!s.activeRuns.includes(ev.runId)) s.activeRuns = [...s.activeRuns, ev.runId];
        s.errors = without(s.errors, ev.runId);
      } else if (phase === 'end' || phase === 'error' || phase === 'interrupted' || phase === 'aborted') {
        s.activeRuns = s.activeRuns.filter((r) => r !== ev.runId);
        s.pending = without(s.pending, ev.runId);
        if (phase === 'error') s.errors = { ...s.errors, [ev.runId]: str(d.error) ?? str(d.message) ?? 'the run failed' };
      }
      return s;
    }
    case 'assistant': {
      const delta = str(d.delta) ?? str(d.text) ?? '';
      if (!delta) return s;
      s.pending = { ...s.pending, [ev.runId]: (s.pending[ev.runId] ?? '') + delta };
      return s;
    }
    case 'tool': {
      const callId = str(d.callId);
      if (!callId) return s;
      const prev = s.tools[callId];
      const phase = (str(d.phase) ?? 'start') as LiveTool['phase'];
      s.tools = {
        ...s.tools,
        [callId]: {
          callId,
          name: str(d.name) ?? prev?.name ?? 'tool',
          runId: ev.runId,
          args: 'args' in d ? d.args : prev?.args,
          result: 'result' in d ? d.result : prev?.result,
          status: str(d.status) ?? prev?.status,
          phase: prev?.phase === 'end' ? 'end' : phase,
          eventId: prev?.eventId ?? ev.id,
          startedAt: prev?.startedAt ?? ev.ts,
          endedAt: phase === 'end' ? ev.ts : prev?.endedAt,
          decided: (d.decided as DecisionView | undefined) ?? prev?.decided,
        },
      };
      return s;
    }
    case 'approval': {
      const approvalId = str(d.approvalId);
      const callId = str(d.callId);
      if (str(d.phase) === 'requested' && approvalId && callId) s.approvalCalls = { ...s.approvalCalls, [approvalId]: callId };
      return s;
    }
    case 'message': {
      // The step's text is now a transcript row: the streaming bubble for that run starts over.
      const msg = d.message as { role?: string; runId?: string } | undefined;
      if (msg?.role === 'assistant') s.pending = without(s.pending, msg.runId ?? ev.runId);
      return s;
    }
    default:
      return s;
  }
}

/** What a finished call's result says about it: denied, interrupted (cut short by a crash or a cancel), failed or done. */
export function resultStatus(result: unknown, failed = false): 'done' | 'failed' | 'denied' | 'interrupted' {
  const r = (result && typeof result === 'object' ? result : {}) as { status?: unknown; error?: { code?: unknown } };
  if (r.status === 'denied') return 'denied';
  if (r.status === 'error' && (r.error?.code === 'interrupted' || r.error?.code === 'cancelled')) return 'interrupted';
  return failed || isFailedResult(result) ? 'failed' : 'done';
}

/** A tool result that reports a refusal or failure (CONTRACT §5: tools answer data, never throw). */
export function isFailedResult(result: unknown): boolean {
  if (!result || typeof result !== 'object') return false;
  const status = (result as { status?: unknown }).status;
  if (status === 'error' || status === 'denied' || status === 'timeout') return true;
  const exitCode = (result as { exitCode?: unknown }).exitCode;
  return typeof exitCode === 'number' && exitCode !== 0;
}
