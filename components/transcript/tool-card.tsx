// A tool_call or tool_result transcript row as a collapsible card, with a one-line preview that stays visible.
import { cn } from '@/lib/cn';
import { compactJson, prettyJson, truncate } from '@/lib/format';
import { isFailedResult } from '@/lib/room/live-state';
import type { TranscriptMessage } from '@/lib/trpc/types';
import { Badge } from '../ui/badge';
import { CodeBlock } from '../ui/code-block';

export function ToolCard({ message }: { message: TranscriptMessage }) {
  const isCall = message.kind === 'tool_call';
  const tool = message.tool;
  const value = isCall ? tool?.args : tool?.result;
  const failed = !isCall && isFailedResult(value);
  const preview = truncate(compactJson(value ?? message.content), 160);
  return (
    <details
      data-testid="tool-card"
      data-kind={message.kind}
      data-tool={tool?.name}
      className={cn(
        'group mx-auto w-full max-w-3xl rounded-md border text-sm',
        failed ? 'border-rose-300 dark:border-rose-800' : 'border-zinc-200 dark:border-zinc-700',
        'bg-white dark:bg-zinc-900',
      )}
    >
      <summary className="flex cursor-pointer list-none items-center gap-2 px-3 py-1.5 select-none">
        <span aria-hidden className="text-zinc-400 transition-transform group-open:rotate-90">▸</span>
        <Badge tone={isCall ? 'info' : failed ? 'danger' : 'success'}>{isCall ? 'tool call' : 'tool result'}</Badge>
        <span className="font-mono text-xs font-semibold">{tool?.name ?? 'tool'}</span>
        <span className="min-w-0 flex-1 truncate font-mono text-xs text-zinc-500" data-testid="tool-card-preview">
          {preview}
        </span>
      </summary>
      <div className="border-t border-zinc-200 px-3 py-2 dark:border-zinc-700">
        {tool?.callId && <p className="mb-1 font-mono text-[11px] text-zinc-500">call {tool.callId}</p>}
        <CodeBlock text={prettyJson(value ?? message.content)} label={isCall ? 'Tool arguments' : 'Tool result'} />
      </div>
    </details>
  );
}
