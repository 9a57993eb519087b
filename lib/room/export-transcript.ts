// Export a whole transcript (every page of chat.history, tool rows included) as Markdown or JSON, and download it.
import type { TranscriptMessage } from '@/lib/trpc/types';
import { fetchAllPages } from './fetch-pages';

export type HistoryFetcher = (cursor: string | undefined) => Promise<{ messages: TranscriptMessage[]; next_cursor: string | null }>;

/** Oldest first; pages of 200 until the cursor runs out. */
export async function fetchWholeTranscript(fetchPage: HistoryFetcher): Promise<TranscriptMessage[]> {
  return (await fetchAllPages(fetchPage, (page) => page.messages)).sort((a, b) => a.id - b.id);
}

const fence = (text: string, lang = '') => {
  const ticks = '`'.repeat(Math.max(3, ...(text.match(/`+/g) ?? []).map((t) => t.length + 1)));
  return `${ticks}${lang}\n${text}\n${ticks}`;
};

export function transcriptToMarkdown(sessionKey: string, rows: readonly TranscriptMessage[]): string {
  const parts = [`# ${sessionKey}`, '', `Exported ${new Date().toISOString()} · ${rows.length} messages`, ''];
  for (const m of rows) {
    const who = m.author.name ?? (m.role === 'user' ? 'user' : m.author.id);
    const head = `## ${m.role}${m.kind !== 'message' ? ` · ${m.kind}` : ''} · ${who} · ${m.createdAt}`;
    if (m.kind === 'tool_call' && m.tool) parts.push(head, '', `\`${m.tool.name}\` (call ${m.tool.callId})`, '', fence(JSON.stringify(m.tool.args, null, 2), 'json'), '');
    else if (m.kind === 'tool_result' && m.tool) parts.push(head, '', `\`${m.tool.name}\` result (call ${m.tool.callId})`, '', fence(JSON.stringify(m.tool.result, null, 2), 'json'), '');
    else parts.push(head, '', m.content, '');
  }
  return parts.join('\n');
}

export function transcriptToJson(sessionKey: string, rows: readonly TranscriptMessage[]): string {
  return JSON.stringify({ sessionKey, exportedAt: new Date().toISOString(), messages: rows }, null, 2);
}

export function download(filename: string, text: string, type: string) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export const exportFileName = (sessionKey: string, ext: 'md' | 'json') => `${sessionKey.replace(/[^a-z0-9._-]+/gi, '_')}.${ext}`;
