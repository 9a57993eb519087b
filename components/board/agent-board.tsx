'use client';
// The agent board (CONTRACT §7): every run of every session and delegate in four live groups — needs input, working,
// done, failed — each item naming its session, agent and parent chain, opening that session when clicked.
import { formatUsd, relativeTime } from '@/lib/format';
import { errorText } from '@/lib/room/connection-text';
import { useTRPC } from '@/lib/trpc/client';
import type { RouterOutputs } from '@/lib/trpc/types';
import { useRoomStore } from '@/stores/room-store-provider';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { startTransition, useEffect, useState } from 'react';
import { useBoardQueryOptions } from '@/lib/room/use-board-prefetch';
import { firstPaint } from '@/lib/room/board-view';
import { Button } from '../ui/button';
import { Badge, type BadgeTone } from '../ui/badge';

type Board = RouterOutputs['status']['board'];
type BoardItem = Board['needsInput'][number];

const GROUPS: Array<{ key: keyof Board; name: string; tone: BadgeTone }> = [
  { key: 'needsInput', name: 'Needs input', tone: 'warning' },
  { key: 'working', name: 'Working', tone: 'info' },
  { key: 'done', name: 'Done', tone: 'success' },
  { key: 'failed', name: 'Failed', tone: 'danger' },
];

export function useBoard(enabled = true) {
  return useQuery(useBoardQueryOptions(enabled));
}

export function AgentBoard() {
  const board = useBoard();
  const closePanel = useRoomStore((s) => s.closePanel);
  // The first paint shows the head of each group (what fits on screen); the rest follows in a later, interruptible render.
  const [whole, setWhole] = useState(false);
  const hasData = board.data !== undefined;
  useEffect(() => {
    if (!hasData || whole) return;
    const timer = window.setTimeout(() => startTransition(() => setWhole(true)), 0);
    return () => window.clearTimeout(timer);
  }, [hasData, whole]);
  return (
    <section aria-label="Agent board" data-testid="agent-board" className="flex min-h-0 flex-1 flex-col">
      <div className="flex shrink-0 items-center gap-2 border-b border-zinc-200 px-3 py-2 dark:border-zinc-800">
        <h2 className="text-sm font-semibold">Agent board</h2>
        <button type="button" aria-label="Close board" onClick={closePanel} className="ml-auto rounded px-1.5 text-zinc-500 hover:bg-zinc-100 dark:hover:bg-zinc-800">
          ✕
        </button>
      </div>
      <div className="min-h-0 flex-1 space-y-3 overflow-y-auto p-2">
        {board.isPending && <p className="p-2 text-sm text-zinc-500">Loading…</p>}
        {board.isError && <p className="p-2 text-sm text-rose-600">Could not load the board: {errorText(board.error)}</p>}
        {board.data &&
          GROUPS.map((g) => (
            // CONTRACT §7 calls them "groups": each is a region (a landmark to jump to) holding a group of that name.
            <section key={g.key} aria-label={g.name} data-testid={`board-${g.key}`} data-count={board.data[g.key].length}>
              <div role="group" aria-label={g.name}>
                <h3 className="mb-1 flex items-center gap-2 px-1 text-xs font-semibold uppercase tracking-wide text-zinc-500">
                  {g.name} <Badge tone={board.data[g.key].length ? g.tone : 'neutral'}>{board.data[g.key].length}</Badge>
                </h3>
                {board.data[g.key].length === 0 ? (
                  <p className="px-1 text-xs text-zinc-400">none</p>
                ) : (
                  <ul className="space-y-1">
                    {firstPaint(board.data[g.key], whole).map((item) => (
                      <li key={item.delivery?.deliveryId ?? item.runId} className="[contain-intrinsic-size:auto_3.5rem] [content-visibility:auto]">
                        {item.delivery ? <DeadDeliveryCard item={item} /> : <BoardCard item={item} tone={g.tone} />}
                      </li>
                    ))}
                  </ul>
                )}
              </div>
            </section>
          ))}
      </div>
    </section>
  );
}

function BoardCard({ item, tone }: { item: BoardItem; tone: BadgeTone }) {
  const selectSession = useRoomStore((s) => s.selectSession);
  const chain = item.parentChain.slice(0, -1);
  return (
    <button
      type="button"
      data-testid="board-item"
      data-run-id={item.runId}
      data-session-key={item.sessionKey}
      onClick={() => selectSession(item.sessionKey)}
      className="w-full rounded border border-zinc-200 px-2 py-1.5 text-left text-xs hover:bg-zinc-50 dark:border-zinc-800 dark:hover:bg-zinc-900"
    >
      <span className="flex items-center gap-2">
        <span className="min-w-0 flex-1 truncate font-mono" title={item.sessionKey}>
          {item.sessionKey}
        </span>
        <Badge tone={tone}>{badgeText(item)}</Badge>
      </span>
      <span className="mt-0.5 flex flex-wrap gap-x-2 text-zinc-500">
        <span>agent {item.agentId}</span>
        <span title={item.startedAt}>{item.endedAt ? `ended ${relativeTime(item.endedAt)}` : `started ${relativeTime(item.startedAt)}`}</span>
        <span>{formatUsd(item.costUsd)}</span>
        {item.budget && <BudgetSpend budget={item.budget} />}
      </span>
      {chain.length > 0 && (
        <span className="mt-0.5 block truncate text-zinc-400" data-testid="board-chain" title={item.parentChain.join(' → ')}>
          {chain.join(' → ')} →
        </span>
      )}
    </button>
  );
}

/** What a card's badge says: its run's status, or what it waits for. */
function badgeText(item: BoardItem): string {
  if (item.waitingFor === 'delegate') return 'delegate needs input';
  if (item.waitingFor) return `${item.waitingFor}${item.tool ? `: ${item.tool}` : ''}`;
  return item.status;
}

/** A request tree's spend against its agent's cap (CONTRACT §5 "Budgets"). */
function BudgetSpend({ budget }: { budget: NonNullable<BoardItem['budget']> }) {
  const parts: string[] = [];
  if (budget.capUsd !== null) parts.push(`${formatUsd(budget.spentUsd)} of ${formatUsd(budget.capUsd)}`);
  if (budget.capTokens !== null) parts.push(`${budget.spentTokens} of ${budget.capTokens} tokens`);
  const over = (budget.capUsd !== null && budget.spentUsd >= budget.capUsd) || (budget.capTokens !== null && budget.spentTokens >= budget.capTokens);
  return (
    <span data-testid="board-budget" className={over ? 'font-semibold text-rose-600 dark:text-rose-400' : undefined} title={`request tree ${budget.rootRunId}`}>
      budget {parts.join(', ')}
    </span>
  );
}

/** A dead delivery under "Failed" (CONTRACT §7, §9): what it was, where to, how often tried, and "Retry". */
function DeadDeliveryCard({ item }: { item: BoardItem }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const selectSession = useRoomStore((s) => s.selectSession);
  const d = item.delivery!;
  const retry = useMutation(trpc.deliveries.retry.mutationOptions({ onSettled: () => qc.invalidateQueries({ queryKey: trpc.status.board.pathKey() }) }));
  return (
    <div data-testid="board-delivery" data-delivery-id={d.deliveryId} data-kind={d.kind} className="flex items-start gap-2 rounded border border-rose-200 px-2 py-1.5 text-xs dark:border-rose-900">
      <button type="button" data-testid="board-item" data-run-id={item.runId} data-session-key={item.sessionKey} onClick={() => item.sessionKey && selectSession(item.sessionKey)} className="min-w-0 flex-1 text-left">
        <span className="flex items-center gap-2">
          <span className="min-w-0 flex-1 truncate font-mono" title={item.sessionKey}>
            {item.sessionKey || d.to}
          </span>
          <Badge tone="danger">
            <span data-testid="delivery-state">dead</span>
          </Badge>
        </span>
        <span className="mt-0.5 block truncate text-zinc-500" title={d.error}>
          {d.kind} to {d.to} · {d.attempts} attempts{d.error ? ` · ${d.error}` : ''}
        </span>
      </button>
      <Button size="sm" variant="secondary" disabled={retry.isPending} onClick={() => retry.mutate({ deliveryId: d.deliveryId })}>
        Retry
      </Button>
    </div>
  );
}
