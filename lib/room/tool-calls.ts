// Derives the toolbox's list of tool calls from transcript tool rows, live tool events and pending approvals.
import type { PendingApproval, TranscriptMessage } from '@/lib/trpc/types';
import { isFailedResult, type LiveState, type ToolStatus } from './live-state';

export interface ToolCallView {
  callId: string;
  name: string;
  runId?: string;
  args: unknown;
  result?: unknown;
  hasResult: boolean;
  status: ToolStatus;
  /** Sort key: first time the call was seen (row id or event id space — only relative order matters). */
  order: number;
}

export function deriveToolCalls(
  messages: readonly TranscriptMessage[],
  live: LiveState,
  approvals: readonly PendingApproval[],
): ToolCallView[] {
  const byId = new Map<string, ToolCallView>();
  let n = 0;
  const upsert = (callId: string, patch: Partial<ToolCallView> & { name: string }) => {
    const prev = byId.get(callId);
    byId.set(callId, {
      callId,
      args: undefined,
      hasResult: false,
      status: 'running',
      order: prev?.order ?? n++,
      ...prev,
      ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)),
    } as ToolCallView);
  };

  for (const m of messages) {
    if (!m.tool?.callId) continue;
    if (m.kind === 'tool_call') upsert(m.tool.callId, { name: m.tool.name, runId: m.runId, args: m.tool.args });
    if (m.kind === 'tool_result') {
      upsert(m.tool.callId, { name: m.tool.name, runId: m.runId, result: m.tool.result, hasResult: true });
    }
  }
  const liveTools = Object.values(live.tools).sort((a, b) => a.eventId - b.eventId);
  for (const t of liveTools) {
    upsert(t.callId, {
      name: t.name,
      runId: t.runId,
      args: t.args,
      ...(t.phase === 'end' ? { result: t.result, hasResult: true } : {}),
    });
  }

  const calls = [...byId.values()].sort((a, b) => a.order - b.order);
  const waiting = new Set<string>();
  for (const a of approvals) {
    // Approvals name the run and tool, not the call: the oldest unfinished matching call is the one paused.
    const match = calls.find((c) => !c.hasResult && !waiting.has(c.callId) && c.name === a.tool && (!c.runId || c.runId === a.runId));
    if (match) waiting.add(match.callId);
  }
  for (const c of calls) {
    c.status = c.hasResult ? (isFailedResult(c.result) ? 'failed' : 'done') : waiting.has(c.callId) ? 'waiting' : 'running';
  }
  return calls;
}
