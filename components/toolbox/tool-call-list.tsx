// The toolbox's list of the session's tool calls: the same cards as the transcript, in call order.
import { compactJson, truncate } from '@/lib/format';
import type { ToolCallView } from '@/lib/room/tool-calls';
import { Badge } from '../ui/badge';
import { STATUS_LABEL, STATUS_TONE, ToolCard } from '../transcript/tool-card';

export function ToolCallList({ calls }: { calls: ToolCallView[] }) {
  if (calls.length === 0) return <p className="px-3 py-4 text-xs text-zinc-500">No tool calls in this session yet.</p>;
  return (
    <ul data-testid="tool-call-list" className="space-y-1.5 p-1.5">
      {calls.map((c) => (
        <li key={c.callId} data-testid="tool-call" data-status={c.status} data-tool={c.name}>
          <ToolCard call={c} compact />
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
      <Badge tone={STATUS_TONE[call.status]}>{STATUS_LABEL[call.status]}</Badge>
    </div>
  );
}
