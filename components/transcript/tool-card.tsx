// One card per tool call, in the transcript and the toolbox alike: tool (and MCP server), status, duration, arguments and
// result formatted (exec as a terminal block, JSON pretty-printed); the call and result rows are merged into it; it folds.
import { cn } from '@/lib/cn';
import { compactJson, prettyJson, truncate } from '@/lib/format';
import type { DecisionView, ToolStatus } from '@/lib/room/live-state';
import type { ToolCallView } from '@/lib/room/tool-calls';
import { Badge, type BadgeTone } from '../ui/badge';
import { CodeBlock } from '../ui/code-block';
import { DELIVERY_TOOLS, DeliveryState } from './delivery-state';

export const STATUS_TONE: Record<ToolStatus, BadgeTone> = {
  running: 'info',
  waiting: 'warning',
  done: 'success',
  failed: 'danger',
  denied: 'danger',
  interrupted: 'neutral',
};
export const STATUS_LABEL: Record<ToolStatus, string> = {
  running: 'running',
  waiting: 'waiting for approval',
  done: 'done',
  failed: 'failed',
  denied: 'denied',
  interrupted: 'interrupted',
};

/** `mcp__<server>__<tool>` → its server and tool; built-in tools have no server. */
export function splitToolName(name: string): { server?: string; tool: string } {
  const m = /^mcp__(.+?)__(.+)$/.exec(name);
  return m ? { server: m[1], tool: m[2]! } : { tool: name };
}

export function formatDuration(startedAt?: string, endedAt?: string): string | undefined {
  if (!startedAt || !endedAt) return undefined;
  const ms = Date.parse(endedAt) - Date.parse(startedAt);
  if (!Number.isFinite(ms) || ms < 0) return undefined;
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

const DECIDERS: Record<string, string> = { user: 'you', chat: 'chat', push: 'notification', reviewer: 'reviewer', rule: 'allow_always rule' };

/** "allowed by reviewer: routine read", "denied by you (room)", "allowed by chat (ann): ok". */
export function decisionText(d: DecisionView): string {
  const verb = d.decision === 'deny' || d.decision === 'decline' ? 'denied' : d.decision === 'cancel' ? 'cancelled' : d.decision === 'allow_always' ? 'allowed always' : 'allowed';
  const who = DECIDERS[d.by.type] ?? d.by.type;
  const where = d.by.type === 'chat' ? ` (${d.by.name ?? d.by.id}${d.by.channel ? `, ${d.by.channel}` : ''})` : d.by.type === 'user' && d.by.id ? ` (${d.by.id})` : '';
  return `${verb} by ${who}${where}${d.reason ? `: ${d.reason}` : ''}`;
}

const rec = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

export function ToolCard({ call, compact = false }: { call: ToolCallView; compact?: boolean }) {
  const { server, tool } = splitToolName(call.name);
  const duration = formatDuration(call.startedAt, call.endedAt);
  const preview = truncate(compactJson(call.name === 'exec' ? (rec(call.args).command ?? call.args) : call.args), compact ? 60 : 140);
  const bad = call.status === 'failed' || call.status === 'denied';
  return (
    <details
      data-testid="tool-card"
      data-kind={call.hasResult ? 'tool_result' : 'tool_call'}
      data-has-result={call.hasResult ? 'true' : 'false'}
      data-call-id={call.callId}
      id={`call-${call.callId}`}
      data-tool={call.name}
      data-status={call.status}
      className={cn(
        'group w-full min-w-0 rounded-md border text-sm',
        !compact && 'mx-auto max-w-3xl',
        bad ? 'border-rose-300 dark:border-rose-800' : call.status === 'waiting' ? 'border-amber-300 dark:border-amber-700' : 'border-zinc-200 dark:border-zinc-700',
        'bg-white dark:bg-zinc-900',
      )}
    >
      <summary className="flex cursor-pointer list-none items-center gap-2 px-3 py-1.5 select-none">
        <span aria-hidden className="text-zinc-400 transition-transform group-open:rotate-90">▸</span>
        {server && (
          <span data-testid="tool-card-server" className="rounded bg-zinc-100 px-1 font-mono text-[10px] text-zinc-600 dark:bg-zinc-800 dark:text-zinc-300" title={`MCP server ${server}`}>
            {server}
          </span>
        )}
        <span className="font-mono text-xs font-semibold">{tool}</span>
        <span className="min-w-0 flex-1 truncate font-mono text-xs text-zinc-500" data-testid="tool-card-preview">
          {preview}
        </span>
        {duration && (
          <span data-testid="tool-card-duration" className="shrink-0 text-[11px] text-zinc-500 tabular-nums">
            {duration}
          </span>
        )}
        {call.decided && (
          <span data-testid="tool-card-decider" className="shrink-0 text-[11px] text-zinc-500" title={decisionText(call.decided)}>
            by {DECIDERS[call.decided.by.type] ?? call.decided.by.type}
          </span>
        )}
        <Badge tone={STATUS_TONE[call.status]}>
          <span data-testid="tool-card-status">{STATUS_LABEL[call.status]}</span>
        </Badge>
        {DELIVERY_TOOLS.has(call.name) && call.runId && <DeliveryState runId={call.runId} callId={call.callId} />}
      </summary>
      <div className="space-y-2 border-t border-zinc-200 px-3 py-2 dark:border-zinc-700">
        {call.decided && (
          <p data-testid="tool-card-decision" data-decided-by={call.decided.by.type} className="text-xs text-zinc-600 dark:text-zinc-400">
            {decisionText(call.decided)}
          </p>
        )}
        {call.name === 'exec' ? <ExecView call={call} /> : <JsonView call={call} compact={compact} />}
      </div>
    </details>
  );
}

function JsonView({ call, compact }: { call: ToolCallView; compact: boolean }) {
  return (
    <>
      <CodeBlock text={prettyJson(call.args)} label={`${call.name} arguments`} maxHeight={compact ? 'max-h-40' : 'max-h-60'} />
      {call.hasResult && <CodeBlock text={prettyJson(call.result)} label={`${call.name} result`} maxHeight={compact ? 'max-h-40' : 'max-h-60'} />}
    </>
  );
}

/** exec as a terminal: the command, then stdout, stderr and the exit code (anything else in the result as JSON). */
function ExecView({ call }: { call: ToolCallView }) {
  const args = rec(call.args);
  const r = rec(call.result);
  const isExecResult = call.hasResult && ('stdout' in r || 'stderr' in r || 'exitCode' in r);
  return (
    <div data-testid="exec-terminal" aria-label="exec terminal" className="overflow-hidden rounded-md bg-zinc-950 font-mono text-xs leading-5 text-zinc-100">
      <pre className="max-h-60 overflow-auto p-2 break-all whitespace-pre-wrap">
        <span className="text-emerald-400 select-none">$ </span>
        <span data-testid="exec-command">{String(args.command ?? '')}</span>
        {typeof args.cwd === 'string' && <span className="text-zinc-500"> (in {args.cwd})</span>}
        {isExecResult && typeof r.stdout === 'string' && r.stdout && (
          <span data-testid="exec-stdout" className="block">
            {r.stdout}
          </span>
        )}
        {isExecResult && typeof r.stderr === 'string' && r.stderr && (
          <span data-testid="exec-stderr" className="block text-rose-300">
            {r.stderr}
          </span>
        )}
      </pre>
      {isExecResult && typeof r.exitCode === 'number' && (
        <div data-testid="exec-exit" className={cn('border-t border-zinc-800 px-2 py-0.5 text-[11px]', r.exitCode === 0 ? 'text-emerald-400' : 'text-rose-400')}>
          exit code {r.exitCode}
        </div>
      )}
      {call.hasResult && !isExecResult && (
        <pre data-testid="exec-result" className="max-h-40 overflow-auto border-t border-zinc-800 p-2 break-all whitespace-pre-wrap text-amber-200">
          {prettyJson(call.result)}
        </pre>
      )}
    </div>
  );
}
