'use client';
// The Approvals dialog's "History" tab: decided items newest first (approvals.history) — what, who decided it, where
// and why — live while open, with the whole record downloadable as JSON or CSV.
import { errorText } from '@/lib/room/connection-text';
import { download } from '@/lib/room/export-transcript';
import { type ApprovalRecordView, fetchWholeRecord, recordFileName, recordToCsv, recordToJson } from '@/lib/room/export-approvals';
import { useTRPC, useTRPCClient } from '@/lib/trpc/client';
import { useInfiniteQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { Button } from '../ui/button';
import { LocalTime } from '../ui/local-time';

const PAGE = 50;

/** "you in the room", "you in the Approvals dialog", "you over JSON-RPC", "ann on telegram", "the reviewer (scripted)". */
export function deciderText(by: ApprovalRecordView['decidedBy']): string {
  switch (by.type) {
    case 'user':
      return by.id === 'inbox' ? 'a person in the Approvals dialog' : by.id === 'jsonrpc' ? 'a person over JSON-RPC' : by.id === 'room' ? 'a person in the room' : 'a person';
    case 'chat':
      return `${by.name ?? by.id ?? 'someone'} in chat${by.channel ? ` (${by.channel})` : ''}`;
    case 'push':
      return 'a person from a notification';
    case 'reviewer':
      return `the reviewer${by.id ? ` (${by.id})` : ''}`;
    case 'rule':
      return 'an allow_always rule';
    default:
      return by.type;
  }
}

export function ApprovalsHistory() {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const query = useInfiniteQuery(
    trpc.approvals.history.infiniteQueryOptions(
      { limit: PAGE },
      { getNextPageParam: (last) => last.next_cursor ?? undefined, refetchInterval: 3_000, staleTime: 0, retry: false },
    ),
  );
  const rows = useMemo(() => query.data?.pages.flatMap((p) => p.approvals) ?? [], [query.data]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const exportAs = async (format: 'json' | 'csv') => {
    setBusy(true);
    setError(null);
    try {
      const all = await fetchWholeRecord((cursor) => client.approvals.history.query({ limit: 200, ...(cursor ? { cursor } : {}) }));
      if (format === 'json') download(recordFileName('json'), recordToJson(all), 'application/json');
      else download(recordFileName('csv'), recordToCsv(all), 'text/csv');
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="flex min-h-0 flex-1 flex-col">
      <div className="flex shrink-0 flex-wrap items-center gap-2 border-b border-zinc-200 px-4 py-1.5 text-xs dark:border-zinc-700">
        <span className="text-zinc-500">Decided items, newest first: who decided, where and why.</span>
        <span className="ml-auto">Export</span>
        <Button size="sm" variant="secondary" disabled={busy} aria-label="Export history as JSON" onClick={() => void exportAs('json')}>
          JSON
        </Button>
        <Button size="sm" variant="secondary" disabled={busy} aria-label="Export history as CSV" onClick={() => void exportAs('csv')}>
          CSV
        </Button>
      </div>
      {error && (
        <p role="alert" className="px-4 py-1 text-xs text-rose-600">
          Export failed: {error}
        </p>
      )}
      <div className="min-h-0 flex-1 overflow-y-auto p-2">
        {query.isPending && <p className="p-3 text-sm text-zinc-500">Loading…</p>}
        {!query.isPending && rows.length === 0 && (
          <p data-testid="history-empty" className="p-6 text-center text-sm text-zinc-500">
            No decisions yet.
          </p>
        )}
        <ul className="space-y-1.5" aria-label="Decided approvals">
          {rows.map((r) => (
            <HistoryItem key={r.approvalId} record={r} />
          ))}
        </ul>
        {query.hasNextPage && (
          <div className="p-2 text-center">
            <Button size="sm" variant="ghost" disabled={query.isFetchingNextPage} onClick={() => void query.fetchNextPage()}>
              Load older
            </Button>
          </div>
        )}
      </div>
    </div>
  );
}

function HistoryItem({ record: r }: { record: ApprovalRecordView }) {
  const denied = r.decision === 'deny' || r.decision === 'decline' || r.decision === 'cancel';
  return (
    <li
      data-testid="history-item"
      data-approval-id={r.approvalId}
      data-decision={r.decision}
      data-decided-by={r.decidedBy.type}
      aria-label={`${r.tool} ${r.decision} by ${deciderText(r.decidedBy)}`}
      className="space-y-0.5 rounded-md border border-zinc-200 p-2 text-sm dark:border-zinc-700"
    >
      <div className="flex flex-wrap items-baseline gap-x-2">
        <span className="font-mono text-xs font-semibold">{r.tool}</span>
        <span className={denied ? 'text-xs font-medium text-rose-600 dark:text-rose-400' : 'text-xs font-medium text-emerald-700 dark:text-emerald-400'}>{r.decision}</span>
        <span data-testid="history-decider" className="text-xs text-zinc-600 dark:text-zinc-400">
          by {deciderText(r.decidedBy)}
        </span>
        <span className="ml-auto text-[11px] text-zinc-500">
          <LocalTime iso={r.decidedAt} />
        </span>
      </div>
      <div className="truncate font-mono text-[11px] text-zinc-500" title={r.sessionKey}>
        {r.sessionKey}
        {r.kind !== 'tool' ? ` · ${r.kind}` : ''}
      </div>
      {r.reason && (
        <p data-testid="history-reason" className="text-xs break-words text-zinc-700 dark:text-zinc-300">
          {r.reason}
        </p>
      )}
    </li>
  );
}
