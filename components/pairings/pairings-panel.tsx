'use client';
// Pairing requests of unknown channel senders (dmPolicy "pairing"): approve runs their held messages, deny drops them.
import { errorText } from '@/lib/room/connection-text';
import { useTRPC } from '@/lib/trpc/client';
import { cn } from '@/lib/cn';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Button } from '../ui/button';
import { LocalTime } from '../ui/local-time';

export const PAIRINGS_POLL_MS = 3_000;

export function PairingsPanel({ className }: { className?: string }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const q = useQuery(trpc.pairings.list.queryOptions(undefined, { refetchInterval: PAIRINGS_POLL_MS, staleTime: 0 }));
  const resolve = useMutation(
    trpc.pairings.resolve.mutationOptions({
      onSettled: () => qc.invalidateQueries({ queryKey: trpc.pairings.list.queryKey() }),
    }),
  );
  const pairings = q.data?.pairings ?? [];
  if (!pairings.length) return null;
  return (
    <section aria-labelledby="pairings-heading" data-testid="pairings-panel" className={cn('px-2 py-2', className)}>
      <h2 id="pairings-heading" className="px-2 pb-1 text-[11px] font-semibold tracking-wide text-zinc-500 uppercase">
        Pairing requests
      </h2>
      <ul className="space-y-1 px-1">
        {pairings.map((p) => {
          const label = `${p.channel} sender ${p.peer}`;
          const busy = resolve.isPending && resolve.variables?.code === p.code && resolve.variables?.channel === p.channel;
          return (
            <li key={`${p.channel}:${p.peer}`} aria-label={`Pairing request from ${label}`} data-testid="pairing-request" className="rounded-md bg-white px-2 py-1.5 text-xs dark:bg-zinc-950">
              <div className="flex items-baseline justify-between gap-2">
                <span className="truncate font-medium">
                  {p.channel} · {p.peer}
                </span>
                <code className="font-mono text-[11px] text-zinc-500" data-testid="pairing-code">
                  {p.code}
                </code>
              </div>
              <p className="mt-0.5 line-clamp-2 break-words text-zinc-600 dark:text-zinc-400">{p.firstMessage}</p>
              <div className="mt-1 flex items-center gap-1">
                <Button size="sm" variant="primary" disabled={busy} title={`Approve ${label}: their held messages run`} onClick={() => resolve.mutate({ channel: p.channel, code: p.code, decision: 'approve' })}>
                  Approve
                </Button>
                <Button size="sm" variant="ghost" disabled={busy} title={`Deny ${label}: their held messages are dropped`} onClick={() => resolve.mutate({ channel: p.channel, code: p.code, decision: 'deny' })}>
                  Deny
                </Button>
                <span className="ml-auto text-[10px] text-zinc-500">
                  <LocalTime iso={p.requestedAt} />
                </span>
              </div>
            </li>
          );
        })}
      </ul>
      {resolve.isError && <p role="alert" className="px-2 pt-1 text-xs text-rose-600">{errorText(resolve.error)}</p>}
    </section>
  );
}
