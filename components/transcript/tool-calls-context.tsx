'use client';
// The open session's tool calls (rows merged with live events and approvals), shared by the transcript's tool cards.
import { deriveToolbox, type ToolCallView } from '@/lib/room/tool-calls';
import { useApprovals } from '@/lib/room/use-approvals';
import { useLiveState } from '@/lib/room/use-live-state';
import { useSessionSummary } from '@/lib/room/use-sessions';
import type { TranscriptMessage } from '@/lib/trpc/types';
import { createContext, useContext, useMemo, type ReactNode } from 'react';

const Calls = createContext<ReadonlyMap<string, ToolCallView>>(new Map());

export function ToolCallsProvider({ sessionKey, rows, children }: { sessionKey: string; rows: readonly TranscriptMessage[]; children: ReactNode }) {
  const live = useLiveState(sessionKey);
  const { pending } = useApprovals(sessionKey);
  const summary = useSessionSummary(sessionKey);
  const running = summary ? summary.status === 'running' : true;
  // Streamed text changes the live state on every delta; the calls only depend on these parts of it.
  const { tools, activeRuns, approvalCalls } = live;
  const calls = useMemo(() => {
    const { calls } = deriveToolbox(rows, { ...live, tools, activeRuns, approvalCalls }, pending, running);
    return new Map(calls.map((c) => [c.callId, c]));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [rows, tools, activeRuns, approvalCalls, pending, running]);
  return <Calls.Provider value={calls}>{children}</Calls.Provider>;
}

/** The merged view of a tool row's call; a row outside the provider (or not derived yet) gets a view of its own. */
export function useToolCall(m: TranscriptMessage): ToolCallView {
  const calls = useContext(Calls);
  const found = m.tool?.callId ? calls.get(m.tool.callId) : undefined;
  if (found) return found;
  const isResult = m.kind === 'tool_result';
  return {
    callId: m.tool?.callId ?? `row:${m.id}`,
    name: m.tool?.name ?? 'tool',
    runId: m.runId,
    args: m.tool?.args,
    result: isResult ? m.tool?.result : undefined,
    hasResult: isResult,
    status: isResult ? 'done' : 'running',
    order: m.id,
    startedAt: m.createdAt,
  };
}

/** Rows as the transcript shows them: a result whose call row is loaded is merged into that call's card. */
export function mergeToolRows(rows: readonly TranscriptMessage[]): TranscriptMessage[] {
  const called = new Set<string>();
  for (const r of rows) if (r.kind === 'tool_call' && r.tool?.callId) called.add(r.tool.callId);
  return rows.filter((r) => !(r.kind === 'tool_result' && r.tool?.callId && called.has(r.tool.callId)));
}
