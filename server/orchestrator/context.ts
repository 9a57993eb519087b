// Builds the model's context from the newest transcript rows (bounded; never the whole transcript).
import type { JSONValue, LanguageModelV4Message } from '@ai-sdk/provider';
import type { TranscriptMessage } from '../events/types';

export type PromptMessage = LanguageModelV4Message;
type AssistantMessage = Extract<PromptMessage, { role: 'assistant' }>;
type ToolMessage = Extract<PromptMessage, { role: 'tool' }>;

/** Rows the model sees as a user-side turn. */
const USER_SIDE = new Set(['message', 'inter_session', 'agent_callback_result', 'steer']);

export function toJsonValue(v: unknown): JSONValue {
  return v === undefined ? null : (JSON.parse(JSON.stringify(v)) as JSONValue);
}

/** How a compaction summary opens in the prompt. */
export const SUMMARY_PREFIX = '[Summary of the earlier conversation]\n';

export const userMessage = (text: string): PromptMessage => ({ role: 'user', content: [{ type: 'text', text }] });

/**
 * Rows written while a step's tool calls were running (a mirror, an inter-session message, a callback, a persona post)
 * sit between those calls and their results in the transcript. A prompt must never split a call from its result
 * (providers refuse it: every later call of the session would be an HTTP 400), so such rows move to just after the
 * last result of the calls that were open when they arrived. `rows` oldest first; the order is otherwise kept.
 *
 * Such rows of `liveRun` (the run the prompt is for, re-driven after a crash) are left out: its prompt as it ran never
 * held them (a step's prompt is its calls and their results), and placed last they ended it with the run's own text, so
 * the model took the step as not made and made it again under new call ids — a send_message post twice, a command run
 * again after its first call answered `interrupted` (probe W).
 */
export function withToolResultsAdjacent(rows: TranscriptMessage[], liveRun?: string): TranscriptMessage[] {
  const answered = new Set<string>();
  for (const r of rows) if (r.kind === 'tool_result' && r.tool) answered.add(r.tool.callId);
  const out: TranscriptMessage[] = [];
  const open = new Set<string>();
  let held: TranscriptMessage[] = [];
  for (const r of rows) {
    if (r.kind === 'tool_call' && r.tool) {
      if (answered.has(r.tool.callId)) open.add(r.tool.callId);
      out.push(r);
    } else if (r.kind === 'tool_result' && r.tool) {
      open.delete(r.tool.callId);
      out.push(r);
      if (open.size === 0 && held.length) {
        out.push(...held);
        held = [];
      }
    } else if (open.size > 0) {
      if (liveRun === undefined || r.runId !== liveRun) held.push(r);
    } else out.push(r);
  }
  out.push(...held);
  return out;
}

/**
 * `rows` oldest first. Tool calls whose results are missing are left for the caller (resume). `liveRun`: the run the
 * prompt is for (withToolResultsAdjacent).
 */
export function toPromptMessages(all: TranscriptMessage[], liveRun?: string): PromptMessage[] {
  const rows = withToolResultsAdjacent(all, liveRun);
  const out: PromptMessage[] = [];
  let assistant: AssistantMessage | null = null;
  let tool: ToolMessage | null = null;
  const answered = new Set(rows.filter((r) => r.kind === 'tool_result').map((r) => r.tool?.callId));

  const flush = () => {
    if (assistant) out.push(assistant);
    if (tool) out.push(tool);
    assistant = null;
    tool = null;
  };

  for (const r of rows) {
    if (r.kind === 'compaction') {
      // The summary of everything before it (CONTRACT §4 "Compaction"): a user-side turn every provider accepts.
      flush();
      out.push(userMessage(`${SUMMARY_PREFIX}${r.content}`));
    } else if (r.role === 'user') {
      flush();
      if (USER_SIDE.has(r.kind)) out.push(userMessage(r.content));
    } else if (r.role === 'assistant' && r.kind === 'tool_call' && r.tool) {
      if (tool) flush();
      if (!answered.has(r.tool.callId)) continue; // pending calls are re-run by the resume path
      assistant ??= { role: 'assistant', content: [] };
      assistant.content.push({ type: 'tool-call', toolCallId: r.tool.callId, toolName: r.tool.name, input: r.tool.args ?? {} });
    } else if (r.role === 'tool' && r.kind === 'tool_result' && r.tool) {
      if (!assistant) continue; // a result whose call fell outside the window
      tool ??= { role: 'tool', content: [] };
      tool.content.push({ type: 'tool-result', toolCallId: r.tool.callId, toolName: r.tool.name, output: { type: 'json', value: toJsonValue(r.tool.result) } });
    } else if (r.role === 'assistant') {
      // text of a step (message, mirror, persona posts): the agent's own earlier turn
      if (tool || assistant?.content.some((p) => p.type === 'tool-call')) flush();
      assistant ??= { role: 'assistant', content: [] };
      assistant.content.push({ type: 'text', text: r.content });
    }
  }
  flush();
  return out.filter((m) => !(m.role === 'assistant' && m.content.length === 0));
}
