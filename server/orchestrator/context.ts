// Builds the model's context from the newest transcript rows (bounded; never the whole transcript).
import type { AssistantModelMessage, JSONValue, ModelMessage, ToolModelMessage } from 'ai';
import type { TranscriptMessage } from '../events/types';

/** Rows the model sees as a user-side turn. */
const USER_SIDE = new Set(['message', 'inter_session', 'agent_callback_result', 'steer']);

export function toJsonValue(v: unknown): JSONValue {
  return v === undefined ? null : (JSON.parse(JSON.stringify(v)) as JSONValue);
}

/** `rows` oldest first. Tool calls whose results are missing are left for the caller (resume). */
export function toModelMessages(rows: TranscriptMessage[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  let assistant: AssistantModelMessage | null = null;
  let tool: ToolModelMessage | null = null;
  const answered = new Set(rows.filter((r) => r.kind === 'tool_result').map((r) => r.tool?.callId));

  const flush = () => {
    if (assistant) out.push(assistant);
    if (tool) out.push(tool);
    assistant = null;
    tool = null;
  };
  const asParts = (a: AssistantModelMessage) => {
    if (typeof a.content === 'string') a.content = a.content ? [{ type: 'text', text: a.content }] : [];
    return a.content;
  };

  for (const r of rows) {
    if (r.role === 'user' || (r.role === 'system' && USER_SIDE.has(r.kind))) {
      flush();
      if (USER_SIDE.has(r.kind) || r.role === 'user') out.push({ role: 'user', content: r.content });
    } else if (r.role === 'assistant' && r.kind === 'tool_call' && r.tool) {
      if (tool) flush();
      assistant ??= { role: 'assistant', content: [] };
      asParts(assistant).push({ type: 'tool-call', toolCallId: r.tool.callId, toolName: r.tool.name, input: r.tool.args ?? {} });
    } else if (r.role === 'tool' && r.kind === 'tool_result' && r.tool) {
      if (!assistant) continue; // a result whose call fell outside the window
      tool ??= { role: 'tool', content: [] };
      tool.content.push({ type: 'tool-result', toolCallId: r.tool.callId, toolName: r.tool.name, output: { type: 'json', value: toJsonValue(r.tool.result) } });
    } else if (r.role === 'assistant') {
      // text of a step (message, mirror, persona posts): the agent's own earlier turn
      if (tool) flush();
      if (assistant && asParts(assistant).some((p) => p.type === 'tool-call')) flush();
      assistant ??= { role: 'assistant', content: [] };
      asParts(assistant).push({ type: 'text', text: r.content });
    }
  }
  flush();
  // Drop tool calls that have no result (pending ones are re-run by the resume path and appended there).
  for (const m of out) {
    if (m.role === 'assistant' && Array.isArray(m.content)) {
      m.content = m.content.filter((p) => p.type !== 'tool-call' || answered.has(p.toolCallId));
    }
  }
  // Leading tool messages or empty assistant messages confuse providers.
  return out.filter((m) => !(m.role === 'assistant' && Array.isArray(m.content) && m.content.length === 0));
}
