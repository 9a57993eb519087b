// Derives the toolbox's list of tool calls from transcript tool rows, live tool events and pending approvals.
import type { PendingApproval, TranscriptMessage } from '@/lib/trpc/types';
import { compactJson } from '@/lib/format';
import { resultStatus, type DecisionView, type LiveState, type ToolStatus } from './live-state';

export interface ToolCallView {
  callId: string;
  name: string;
  runId?: string;
  args: unknown;
  result?: unknown;
  hasResult: boolean;
  /** Failure reported by the event stream even when the result object looks fine. */
  failed?: boolean;
  status: ToolStatus;
  /** Sort key: first time the call was seen (row id or event id space — only relative order matters). */
  order: number;
  /** When the call started and ended (row or event times), for its duration. */
  startedAt?: string;
  endedAt?: string;
  /** Who decided the call and why, when it was gated (the card says "allowed by reviewer: …"). */
  decided?: DecisionView;
}

export interface ToolboxModel {
  calls: ToolCallView[];
  /** Pending approvals oldest first; same-instant requests in the order their calls were made. */
  approvals: PendingApproval[];
}

export function deriveToolbox(
  messages: readonly TranscriptMessage[],
  live: LiveState,
  pending: readonly PendingApproval[],
  /** Whether the session has a run going (from its summary); live lifecycle events count too. */
  sessionRunning = true,
): ToolboxModel {
  const approvals = [...pending].sort((a, b) => a.requestedAt.localeCompare(b.requestedAt));
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
    if (m.kind === 'tool_call') upsert(m.tool.callId, { name: m.tool.name, runId: m.runId, args: m.tool.args, startedAt: m.createdAt });
    if (m.kind === 'tool_result') {
      const args = byId.get(m.tool.callId) ? undefined : m.tool.args;
      const decided = (m.meta as { decided?: DecisionView } | undefined)?.decided;
      upsert(m.tool.callId, { name: m.tool.name, runId: m.runId, args, result: m.tool.result, hasResult: true, endedAt: m.createdAt, decided });
    }
  }
  const liveTools = Object.values(live.tools).sort((a, b) => a.eventId - b.eventId);
  for (const t of liveTools) {
    upsert(t.callId, {
      name: t.name,
      runId: t.runId,
      args: t.args,
      startedAt: byId.get(t.callId)?.startedAt ?? t.startedAt,
      ...(t.phase === 'end' ? { result: t.result, hasResult: true, failed: !!t.status && t.status !== 'ok', endedAt: byId.get(t.callId)?.endedAt ?? t.endedAt, decided: byId.get(t.callId)?.decided ?? t.decided } : {}),
    });
  }

  const calls = [...byId.values()].sort((a, b) => a.order - b.order);
  const waiting = new Set<string>();
  const approvalCall = new Map<string, string>();
  for (const a of approvals) {
    // An approval names its call; if that call's row is not loaded yet, fall back to the unfinished call of the
    // same run and tool with the same arguments, else the oldest unfinished call of that run and tool.
    const callId = a.callId ?? live.approvalCalls[a.approvalId];
    const open = (c: ToolCallView) => !c.hasResult && !waiting.has(c.callId) && c.name === a.tool && (!c.runId || c.runId === a.runId);
    const args = compactJson(a.args);
    const match =
      (callId ? calls.find((c) => c.callId === callId) : undefined) ??
      calls.find((c) => open(c) && compactJson(c.args) === args) ??
      calls.find(open);
    if (match) {
      waiting.add(match.callId);
      approvalCall.set(a.approvalId, match.callId);
    } else {
      // The call's row is not loaded (or not written yet): still list what waits for a decision.
      const id = callId ?? `approval:${a.approvalId}`;
      calls.push({ callId: id, name: a.tool, runId: a.runId, args: a.args, hasResult: false, status: 'waiting', order: n++ });
      waiting.add(id);
      approvalCall.set(a.approvalId, id);
    }
  }
  for (const c of calls) {
    if (c.hasResult) c.status = resultStatus(c.result, c.failed);
    else if (waiting.has(c.callId)) c.status = 'waiting';
    // A call with no result whose run is over was cut short (cancelled, crashed): it is not running.
    else c.status = sessionRunning || (c.runId !== undefined && live.activeRuns.includes(c.runId)) ? 'running' : 'interrupted';
  }
  const orderOf = new Map(calls.map((c) => [c.callId, c.order]));
  const callOrder = (a: PendingApproval) => orderOf.get(approvalCall.get(a.approvalId) ?? '') ?? Number.MAX_SAFE_INTEGER;
  approvals.sort((a, b) => a.requestedAt.localeCompare(b.requestedAt) || callOrder(a) - callOrder(b));
  return { calls, approvals };
}
