// The scripted model's deterministic summary for compaction: a count and the first line of each summarized message.
import type { LanguageModelV4CallOptions, LanguageModelV4Prompt } from '@ai-sdk/provider';

export const SUMMARY_HEADER = /^Summary of (\d+) earlier messages:$/;
/** The summary keeps the newest lines only, so it stays bounded however long the session grows. */
export const SCRIPTED_SUMMARY_LINES = 40;
const LINE_CHARS = 120;
const PREVIOUS = 'Previous summary:\n';

export function isCompactionCall(o: LanguageModelV4CallOptions): boolean {
  return (o.providerOptions?.crosstalk as { task?: unknown } | undefined)?.task === 'compaction';
}

const firstLine = (text: string) => {
  const line = text.trim().split(/\r?\n/, 1)[0] ?? '';
  return line.length > LINE_CHARS ? `${line.slice(0, LINE_CHARS)}…` : line;
};

/**
 * `Summary of <n> earlier messages:` then `- <first line>` per message, oldest first, the newest 40 lines kept.
 * A previous summary given as the first part (`Previous summary:\n…`) is continued: its count and lines carry on.
 */
export function scriptedSummary(prompt: LanguageModelV4Prompt): string {
  let count = 0;
  let lines: string[] = [];
  for (const msg of prompt) {
    if (msg.role !== 'user') continue;
    for (const part of msg.content) {
      if (part.type !== 'text') continue;
      if (part.text.startsWith(PREVIOUS)) {
        const prev = part.text.slice(PREVIOUS.length).split('\n');
        const m = SUMMARY_HEADER.exec(prev[0] ?? '');
        count += m ? Number(m[1]) : 0;
        lines.push(...(m ? prev.slice(1) : prev.map((l) => `- ${firstLine(l)}`)).filter((l) => l.trim()));
        continue;
      }
      count++;
      lines.push(`- ${firstLine(part.text)}`);
    }
  }
  if (lines.length > SCRIPTED_SUMMARY_LINES) lines = lines.slice(-SCRIPTED_SUMMARY_LINES);
  return [`Summary of ${count} earlier messages:`, ...lines].join('\n');
}
