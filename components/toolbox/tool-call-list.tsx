// The toolbox's list of the session's tool calls with their state (running, waiting, done, failed).
import { compactJson, prettyJson, truncate } from '@/lib/format';
import type { ToolStatus } from '@/lib/room/live-state';
import type { ToolCallView } from '@/lib/room/tool-calls';
import { Badge, type BadgeTone } from '../ui/badge';
import { CodeBlock } from '../ui/code-block';

const STATUS_TONE: Record<ToolStatus, BadgeTone> = { running: 'info', waiting: 'warning', done: 'success', failed: 'danger' };

export function ToolCallList({ calls }: { calls: ToolCallView[] }) {
  if (calls.length === 0) return <p className="px-3 py-4 text-xs text-zinc-500">No tool calls in this session yet.</p>;
  return (
    <ul data-testid="tool-call-list" className="divide-y divide-zinc-200 dark:divide-zinc-800">
      {calls.map((c) => (
        <li key={c.callId} data-testid="tool-call" data-status={c.status} data-tool={c.name}>
          <details className="group">
            <summary className="flex cursor-pointer list-none items-center gap-2 px-3 py-2 text-sm select-none">
              <span aria-hidden className="text-zinc-400 transition-transform group-open:rotate-90">▸</span>
              <span className="font-mono text-xs font-semibold">{c.name}</span>
              <span className="min-w-0 flex-1 truncate font-mono text-[11px] text-zinc-500">{truncate(compactJson(c.args), 80)}</span>
              <Badge tone={STATUS_TONE[c.status]}>{c.status}</Badge>
            </summary>
            <div className="space-y-2 px-3 pb-3">
              <CodeBlock text={prettyJson(c.args)} label={`${c.name} arguments`} maxHeight="max-h-40" />
              {c.hasResult && <CodeBlock text={prettyJson(c.result)} label={`${c.name} result`} maxHeight="max-h-40" />}
            </div>
          </details>
        </li>
      ))}
    </ul>
  );
}

/** Collapsed toolbox: just the newest call, one line. */
export function ToolCallSummary({ call }: { call: ToolCallView }) {
  return (
    <div data-testid="tool-call-latest" data-status={call.status} className="flex items-center gap-2 px-3 py-2 text-sm">
      <span className="text-[11px] text-zinc-500">latest</span>
      <span className="font-mono text-xs font-semibold">{call.name}</span>
      <span className="min-w-0 flex-1 truncate font-mono text-[11px] text-zinc-500">{truncate(compactJson(call.args), 60)}</span>
      <Badge tone={STATUS_TONE[call.status]}>{call.status}</Badge>
    </div>
  );
}
