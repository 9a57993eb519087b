'use client';
// The status panel: active runs, pending approvals, the reusable delegate pool and its disk footprint, silence and rate limits.
import { cn } from '@/lib/cn';
import { formatBytes, formatTokens, formatUsd } from '@/lib/format';
import { usePendingCount } from '../approvals/pending-count';
import { useStatus } from '@/lib/room/use-status';

export function StatusPanel({ className }: { className?: string }) {
  const q = useStatus();
  const s = q.data;
  // The pending figure is the Approvals button's own number (./pending-count), not a second poll that could lag it;
  // the status figure stands in until that list is loaded.
  const pending = usePendingCount() ?? s?.pendingApprovals ?? 0;
  const items: Array<{ id: string; label: string; value: string; title?: string; warn?: boolean }> = s
    ? [
        { id: 'active-runs', label: 'Active runs', value: String(s.activeRuns) },
        { id: 'pending-approvals', label: 'Pending approvals', value: String(pending), warn: pending > 0 },
        { id: 'reusable-delegates', label: 'Reusable delegates', value: String(s.delegates.reusable) },
        { id: 'delegate-bytes', label: 'Delegate disk footprint', value: formatBytes(s.delegates.bytes), title: `${s.delegates.bytes} bytes` },
        { id: 'silence', label: 'Silent runs', value: String(s.silence) },
        { id: 'rate-limited', label: 'Rate-limit hits', value: String(s.rateLimited), warn: s.rateLimited > 0 },
        { id: 'runs', label: 'Runs ok / error / interrupted', value: `${s.runs.ok} / ${s.runs.error} / ${s.runs.interrupted}` },
        { id: 'webhooks-dead', label: 'Dead webhooks', value: String(s.webhooksDead), warn: s.webhooksDead > 0 },
        ...(s.mcp ?? []).map((m) => ({
          id: `mcp-${m.server}`,
          label: `MCP ${m.server}`,
          value: m.state === 'ready' ? `up · ${m.tools} tools` : m.state,
          title: m.error,
          warn: m.state !== 'ready',
        })),
        ...(s.usage
          ? [
              { id: 'tokens', label: 'Tokens in / out', value: `${formatTokens(s.usage.inputTokens)} / ${formatTokens(s.usage.outputTokens)}`, title: `${s.usage.inputTokens} input, ${s.usage.outputTokens} output tokens` },
              { id: 'cost', label: 'Model cost', value: formatUsd(s.usage.costUsd), title: `${s.usage.costUsd} USD (models without a price count as 0)` },
            ]
          : []),
      ]
    : [];
  return (
    <section aria-labelledby="status-panel-heading" data-testid="status-panel" className={cn('px-2 py-2', className)}>
      <h2 id="status-panel-heading" className="px-2 pb-1 text-[11px] font-semibold tracking-wide text-zinc-500 uppercase">
        Status
      </h2>
      {q.isError && !s && <p className="px-2 text-xs text-rose-600">Could not load the status.</p>}
      {/* One row a figure, label left and value right: a label wraps rather than being cut off in the narrow sidebar. */}
      <dl className="flex flex-col gap-px px-1">
        {items.map((it) => (
          <div key={it.id} className="flex items-baseline justify-between gap-2 rounded-md bg-white px-2 py-0.5 dark:bg-zinc-950" title={it.title}>
            <dt className="min-w-0 text-[11px] leading-tight break-words text-zinc-500">{it.label}</dt>
            <dd
              data-testid={`status-${it.id}`}
              className={cn('shrink-0 text-right font-mono text-xs font-semibold whitespace-nowrap tabular-nums', it.warn && 'text-amber-700 dark:text-amber-300')}
            >
              {it.value}
            </dd>
          </div>
        ))}
      </dl>
    </section>
  );
}
