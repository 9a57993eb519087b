'use client';
// The session header's usage: tokens and cost of this session and, rolled up, of every delegate and session it started.
import { formatTokens, formatUsd } from '@/lib/format';
import { useTRPC } from '@/lib/trpc/client';
import { useQuery } from '@tanstack/react-query';

export function SessionUsage({ sessionKey, running }: { sessionKey: string; running: boolean }) {
  const trpc = useTRPC();
  // Refreshed while a run is going, and once more after it (the last step's usage lands at the end).
  const q = useQuery(trpc.sessions.usage.queryOptions({ sessionKey }, { refetchInterval: running ? 2_000 : 10_000, staleTime: 0, retry: false }));
  const u = q.data;
  const tree = u?.tree;
  // Rendered from the first paint (placeholders until the figures arrive), so the header never changes shape under the reader.
  const title = u && tree
    ? [
        `This session: ${u.inputTokens} input + ${u.outputTokens} output tokens, ${u.costUsd} USD over ${u.runs} runs`,
        `With its ${tree.sessions - 1} delegates and started sessions: ${tree.inputTokens} input + ${tree.outputTokens} output tokens, ${tree.costUsd} USD`,
        ...(u.unpricedModels.length ? [`No price configured for ${u.unpricedModels.join(', ')} (counted as 0)`] : []),
      ].join('\n')
    : 'Tokens and cost of this session and everything it started';
  return (
    <span data-testid="session-usage" data-loaded={tree ? 'true' : undefined} title={title} className="hidden min-w-0 shrink-[4] truncate font-mono text-[11px] text-zinc-500 tabular-nums sm:block">
      <span data-testid="session-usage-tokens">{tree ? formatTokens(tree.inputTokens + tree.outputTokens) : '–'} tok</span>
      {' · '}
      <span data-testid="session-usage-cost">{tree ? formatUsd(tree.costUsd) : '$–'}</span>
    </span>
  );
}
