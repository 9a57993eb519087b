// A2A tasks are crosstalk runs: a run row (plus its pending approvals) as an A2A Task, and its agent events as A2A stream responses.
import crypto from 'node:crypto';
import { Role, type Message, type Part, type StreamResponse, type Task, TaskState, type TaskStatus } from '@a2a-js/sdk';
import type { AgentEvent } from '../events/types';
import type { RunRow } from '../store/schema';
import { SESSION_KEY_RE } from '../sessions/keys';

export const A2A_SEGMENT = 'a2a';
/** ServerCallContext state key: the HTTP request's abort signal (a dropped stream stops following the run). */
export const SIGNAL_KEY = 'crosstalk.signal';

/** `agent:<agentId>:a2a:<contextId>` (CONTRACT §8); contextIds are lowercased like every key. */
export const a2aSessionKey = (agentId: string, contextId: string) => `agent:${agentId}:${A2A_SEGMENT}:${contextId.toLowerCase()}`;

/**
 * The contextId of one of this agent's A2A sessions; null for any other key, a deleted session's archive key
 * (`<key>#deleted-<ms>`, server/store/session-archive.ts) included: a deleted session's tasks are gone for clients, as
 * its history is (chat.history answers unknown_session), and that key is no contextId a client could send.
 */
export function contextIdOf(sessionKey: string, agentId: string): string | null {
  const prefix = `agent:${agentId}:${A2A_SEGMENT}:`;
  return sessionKey.startsWith(prefix) && SESSION_KEY_RE.test(sessionKey) ? sessionKey.slice(prefix.length) : null;
}

/**
 * A run's contextId as its client spelled it: session keys are lowercased, so the key alone gives `ctx-abc` for a
 * client's `Ctx-ABC`; the run's origin keeps the spelling it came with. Null: not one of this agent's A2A sessions.
 */
export function contextOfRun(row: { session_key: string; origin: string | null }, agentId: string): string | null {
  const folded = contextIdOf(row.session_key, agentId);
  if (folded === null || !row.origin) return folded;
  let given: unknown;
  try {
    given = (JSON.parse(row.origin) as { contextId?: unknown } | null)?.contextId;
  } catch {
    return folded;
  }
  return typeof given === 'string' && a2aSessionKey(agentId, given) === row.session_key ? given : folded;
}

export const textPart = (text: string): Part => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' });

export function textOf(message: Message | undefined): string {
  return (message?.parts ?? [])
    .map((p) => (p.content?.$case === 'text' ? p.content.value : p.content?.$case === 'data' ? JSON.stringify(p.content.value) : ''))
    .filter(Boolean)
    .join('\n');
}

export function agentMessage(taskId: string, contextId: string, text: string): Message {
  return { messageId: `msg_${crypto.randomUUID()}`, contextId, taskId, role: Role.ROLE_AGENT, parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [] };
}

function status(state: TaskState, taskId: string, contextId: string, text?: string, ts?: string, extra: Part[] = []): TaskStatus {
  const message = text !== undefined ? agentMessage(taskId, contextId, text) : undefined;
  if (message) message.parts.push(...extra);
  return { state, message, timestamp: ts ?? new Date().toISOString() };
}

export const responseArtifactId = (runId: string) => `${runId}:response`;

function responseArtifact(runId: string, text: string) {
  return { artifactId: responseArtifactId(runId), name: 'response', description: 'The final response', parts: [textPart(text)], metadata: undefined, extensions: [] };
}

export const isTerminal = (s: TaskState) => s === TaskState.TASK_STATE_COMPLETED || s === TaskState.TASK_STATE_FAILED || s === TaskState.TASK_STATE_CANCELED || s === TaskState.TASK_STATE_REJECTED;

/** A pending approval as an input-required status shows it (from its row or its `requested` event). */
export interface AskedItem {
  approvalId: string;
  kind?: string;
  tool: string;
  args: unknown;
}

export interface TaskView {
  row: RunRow;
  contextId: string;
  pending: AskedItem[];
}

/** The run's state in A2A terms: input-required while an approval waits; cancel is `error`/`cancelled`. */
export function stateOf(row: RunRow, pendingApprovals: number): TaskState {
  switch (row.status) {
    case 'queued':
      return TaskState.TASK_STATE_SUBMITTED;
    case 'ok':
      return TaskState.TASK_STATE_COMPLETED;
    case 'error':
      return row.error === 'cancelled' ? TaskState.TASK_STATE_CANCELED : TaskState.TASK_STATE_FAILED;
    case 'interrupted':
      return TaskState.TASK_STATE_FAILED;
    default:
      return pendingApprovals > 0 || row.status === 'waiting_approval' ? TaskState.TASK_STATE_INPUT_REQUIRED : TaskState.TASK_STATE_WORKING;
  }
}

const asksServer = (i: AskedItem) => i.kind === 'elicitation' || i.kind === 'authorization';

/**
 * The input-required status: a line saying what waits — for an MCP elicitation (or sign-in) the server's own message, and its
 * form as a data part `{approvalId, kind, server, tool, message, mode, requestedSchema?, url?}` (CONTRACT §5) that a client
 * can answer with approvals.resolve; for gated tools, their names.
 */
function inputRequired(taskId: string, contextId: string, items: AskedItem[], ts?: string): TaskStatus {
  const lines: string[] = [];
  const data: Part[] = [];
  const tools = items.filter((i) => !asksServer(i)).map((i) => i.tool);
  if (tools.length || !items.length) lines.push(`Waiting for approval: ${tools.join(', ')} (resolve it in the crosstalk room or with approvals.resolve)`);
  for (const i of items.filter(asksServer)) {
    const a = (i.args ?? {}) as { server?: string; message?: string; mode?: string; requestedSchema?: unknown; url?: string };
    const server = String(a.server ?? 'MCP server');
    const what = i.kind === 'authorization' ? `${server} needs you to sign in${a.message ? `: ${a.message}` : ''}` : `${server} asks: ${String(a.message ?? '')}`;
    lines.push(`${what}${a.url ? ` (open ${a.url})` : ''} (answer it in the crosstalk room or with approvals.resolve ${i.approvalId})`);
    data.push({
      content: {
        $case: 'data',
        value: { approvalId: i.approvalId, kind: i.kind, server, tool: i.tool, message: a.message ?? '', mode: a.mode ?? 'form', ...(a.requestedSchema ? { requestedSchema: a.requestedSchema } : {}), ...(a.url ? { url: a.url } : {}) },
      },
      metadata: undefined,
      filename: '',
      mediaType: 'application/json',
    });
  }
  return status(TaskState.TASK_STATE_INPUT_REQUIRED, taskId, contextId, lines.join('\n'), ts, data);
}

export function taskOf(v: TaskView): Task {
  const { row, contextId } = v;
  const state = stateOf(row, v.pending.length);
  const inputs = JSON.parse(row.input) as Array<{ content: string }>;
  const history: Message[] = inputs.map((i, n) => ({
    messageId: `${row.id}:in:${n}`,
    contextId,
    taskId: row.id,
    role: Role.ROLE_USER,
    parts: [textPart(i.content)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  }));
  const response = (row.response ?? '').trim();
  let text: string | undefined;
  if (state === TaskState.TASK_STATE_COMPLETED) text = response;
  else if (state === TaskState.TASK_STATE_FAILED || state === TaskState.TASK_STATE_CANCELED) text = row.error ?? row.status;
  return {
    id: row.id,
    contextId,
    status: state === TaskState.TASK_STATE_INPUT_REQUIRED ? inputRequired(row.id, contextId, v.pending, row.ended_at ?? undefined) : status(state, row.id, contextId, text, row.ended_at ?? undefined),
    artifacts: state === TaskState.TASK_STATE_COMPLETED ? [responseArtifact(row.id, response)] : [],
    history,
    metadata: { sessionKey: row.session_key },
  };
}

export const taskResponse = (task: Task): StreamResponse => ({ payload: { $case: 'task', value: task } });

function statusUpdate(taskId: string, contextId: string, s: TaskStatus, meta?: Record<string, unknown>): StreamResponse {
  return { payload: { $case: 'statusUpdate', value: { taskId, contextId, status: s, metadata: meta } } };
}

/**
 * One agent event of a task's run as the stream responses a client sees (none for most events):
 * start → working; an approval → input-required, its resolution → working; an assistant row → working with that text;
 * the end → the response artifact then completed (or failed / canceled). `eventId` rides along in metadata.
 */
export function streamResponsesOf(ev: AgentEvent, contextId: string): StreamResponse[] {
  const taskId = ev.runId;
  const meta = { eventId: ev.id };
  const d = ev.data as Record<string, unknown>;
  switch (ev.stream) {
    case 'lifecycle':
      if (d.phase === 'start') return [statusUpdate(taskId, contextId, status(TaskState.TASK_STATE_WORKING, taskId, contextId, undefined, ev.ts), meta)];
      if (d.phase === 'end') {
        const text = String(d.response ?? '').trim();
        return [
          { payload: { $case: 'artifactUpdate', value: { taskId, contextId, artifact: responseArtifact(taskId, text), append: false, lastChunk: true, metadata: meta } } },
          statusUpdate(taskId, contextId, status(TaskState.TASK_STATE_COMPLETED, taskId, contextId, text, ev.ts), meta),
        ];
      }
      if (d.phase === 'error') {
        const cancelled = d.error === 'cancelled';
        return [statusUpdate(taskId, contextId, status(cancelled ? TaskState.TASK_STATE_CANCELED : TaskState.TASK_STATE_FAILED, taskId, contextId, String(d.error ?? d.status ?? 'failed'), ev.ts), meta)];
      }
      return [];
    case 'approval':
      return approvalResponses(d, taskId, contextId, ev.ts, meta);
    case 'tool': {
      // A delegate's item, forwarded to this run while it waits on the delegate (standard delegate_agent).
      const a = d.phase === 'update' ? delegatedApproval(d) : undefined;
      return a ? approvalResponses(a, taskId, contextId, ev.ts, meta) : [];
    }
    case 'message': {
      const m = d.message as { role?: string; kind?: string; content?: string } | undefined;
      if (m?.role === 'assistant' && m.kind === 'message' && m.content) return [statusUpdate(taskId, contextId, status(TaskState.TASK_STATE_WORKING, taskId, contextId, m.content, ev.ts), meta)];
      return [];
    }
    default:
      return [];
  }
}

/** An approval event's status update: input-required while it waits, working again once it is decided. */
function approvalResponses(d: Record<string, unknown>, taskId: string, contextId: string, ts: string, meta: Record<string, unknown>): StreamResponse[] {
  if (d.phase === 'requested') {
    const item: AskedItem = { approvalId: String(d.approvalId), kind: d.kind === undefined ? undefined : String(d.kind), tool: String(d.tool), args: d.args };
    return [statusUpdate(taskId, contextId, inputRequired(taskId, contextId, [item], ts), { ...meta, approvalId: d.approvalId })];
  }
  if (d.phase === 'resolved') return [statusUpdate(taskId, contextId, status(TaskState.TASK_STATE_WORKING, taskId, contextId, undefined, ts), { ...meta, approvalId: d.approvalId, decision: d.decision })];
  return [];
}

/**
 * The approval event inside a `tool` update that forwards a delegate's events to the run waiting on it, however deep
 * (a delegate's own delegate's events arrive forwarded twice); undefined for any other update.
 */
export function delegatedApproval(d: Record<string, unknown>): Record<string, unknown> | undefined {
  let x = d;
  for (let depth = 0; depth < 16; depth++) {
    const fwd = x.delegate as { stream?: unknown; data?: unknown } | undefined;
    if (!fwd || typeof fwd.data !== 'object' || fwd.data === null) return undefined;
    if (fwd.stream === 'approval') return fwd.data as Record<string, unknown>;
    if (fwd.stream !== 'tool') return undefined;
    x = fwd.data as Record<string, unknown>;
  }
  return undefined;
}

/** Whether a stream response ends the task's stream. */
export function isFinal(r: StreamResponse): boolean {
  return r.payload?.$case === 'statusUpdate' && isTerminal(r.payload.value.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED);
}
