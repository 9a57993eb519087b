// An MCP tool result as the data a crosstalk tool answers: text, structured content and errors, within exec's output cap.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { OUTPUT_CAP } from '../tools/exec';

type Block = CallToolResult['content'][number];

/** One content block as the model sees it: text stays text; binary blocks are described, never inlined. */
function blockOf(b: Block): Record<string, unknown> {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: b.text };
    case 'image':
    case 'audio':
      return { type: b.type, mimeType: b.mimeType, bytes: Math.floor((b.data.length * 3) / 4) };
    case 'resource_link':
      return { type: 'resource_link', uri: b.uri, name: b.name, ...(b.mimeType ? { mimeType: b.mimeType } : {}) };
    case 'resource': {
      const r = b.resource as { uri: string; mimeType?: string; text?: string; blob?: string };
      return { type: 'resource', uri: r.uri, ...(r.mimeType ? { mimeType: r.mimeType } : {}), ...(r.text !== undefined ? { text: r.text } : { bytes: Math.floor(((r.blob ?? '').length * 3) / 4) }) };
    }
    default:
      return { type: (b as { type: string }).type };
  }
}

/**
 * `{status: "ok", content, structuredContent?}` or, when the server flagged the call as failed,
 * `{status: "error", error: {code: "tool_error", message: <the server's text>}, content}` (CONTRACT §6). Text is capped at OUTPUT_CAP in total
 * (the same cap as exec's streams) and `truncated: true` says so.
 */
export function toToolData(r: CallToolResult): Record<string, unknown> {
  let budget = OUTPUT_CAP;
  let truncated = false;
  const content = (r.content ?? []).map((b) => {
    const out = blockOf(b);
    if (typeof out.text === 'string') {
      if (out.text.length > budget) {
        out.text = out.text.slice(0, budget);
        truncated = true;
      }
      budget -= (out.text as string).length;
    }
    return out;
  });
  let structured: unknown = r.structuredContent;
  if (structured !== undefined && JSON.stringify(structured).length > OUTPUT_CAP) {
    structured = undefined;
    truncated = true;
  }
  const extra = { ...(structured !== undefined ? { structuredContent: structured } : {}), ...(truncated ? { truncated: true } : {}) };
  if (r.isError) {
    const message = content.map((c) => (typeof c.text === 'string' ? c.text : '')).join('\n').trim() || 'the MCP tool reported an error';
    return { status: 'error', error: { code: 'tool_error', message: message.slice(0, 4096) }, content, ...extra };
  }
  return { status: 'ok', content, ...extra };
}
