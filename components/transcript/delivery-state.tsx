'use client';
// A hand-off's delivery state on its tool card (CONTRACT §7, §9): accepted, delivered, running, answered, failed or dead,
// live (asked again while it is on its way), with "Retry" on a dead one; and the link from a received row back to its call.
import { useTRPC } from '@/lib/trpc/client';
import { useRoomStore } from '@/stores/room-store-provider';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Badge, type BadgeTone } from '../ui/badge';
import { Button } from '../ui/button';

/** The tools whose calls start deliveries (CONTRACT §7). */
export const DELIVERY_TOOLS = new Set(['sessions_send', 'agents_message', 'delegate_agent', 'message']);

const TONE: Record<string, BadgeTone> = { accepted: 'neutral', delivered: 'info', running: 'info', answered: 'success', failed: 'danger', dead: 'danger' };
const ENDED = new Set(['answered', 'failed', 'dead']);
/** While a delivery is on its way its card asks again this often (its end may come long after the call's). */
export const DELIVERY_POLL_MS = 1_000;

export function DeliveryState({ runId, callId }: { runId: string; callId: string }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const q = useQuery(
    trpc.deliveries.forCall.queryOptions(
      { runId, callId },
      { refetchInterval: (query) => (query.state.data?.deliveries.length && query.state.data.deliveries.every((d) => ENDED.has(d.state)) ? false : DELIVERY_POLL_MS) },
    ),
  );
  const retry = useMutation(trpc.deliveries.retry.mutationOptions({ onSettled: () => qc.invalidateQueries({ queryKey: trpc.deliveries.forCall.queryKey({ runId, callId }) }) }));
  const list = q.data?.deliveries ?? [];
  if (!list.length) return null;
  return (
    <span className="flex shrink-0 items-center gap-1" data-testid="delivery-states">
      {list.map((d) => (
        <span key={d.deliveryId} className="flex items-center gap-1" data-testid="delivery" data-delivery-id={d.deliveryId} data-state={d.state} title={d.error ? `${d.error.code}: ${d.error.message}` : `delivery ${d.deliveryId}`}>
          <Badge tone={TONE[d.state] ?? 'neutral'}>
            <span data-testid="delivery-state">{d.state}</span>
          </Badge>
          {d.state === 'dead' && (
            <Button
              size="sm"
              variant="secondary"
              disabled={retry.isPending}
              onClick={(e) => {
                e.preventDefault(); // inside the card's <summary>: do not fold it
                retry.mutate({ deliveryId: d.deliveryId });
              }}
            >
              Retry
            </Button>
          )}
        </span>
      ))}
    </span>
  );
}

/** A row a delivery brought (an inter-session message): a link to the sender's call, opening its session there. */
export function CallLink({ sessionKey, callId }: { sessionKey: string; callId: string }) {
  const selectSession = useRoomStore((s) => s.selectSession);
  return (
    <a
      href={`/?session=${encodeURIComponent(sessionKey)}#call-${encodeURIComponent(callId)}`}
      data-testid="call-link"
      data-call-id={callId}
      aria-label={`Open the sending call in ${sessionKey}`}
      onClick={(e) => {
        if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        selectSession(sessionKey);
        // The sender's transcript renders after the switch: find the call's card, open it and bring it into view.
        let tries = 0;
        const find = () => {
          const card = document.querySelector<HTMLDetailsElement>(`[data-testid="tool-card"][data-call-id="${CSS.escape(callId)}"]`);
          if (card) {
            card.open = true;
            card.scrollIntoView({ block: 'center' });
          } else if (tries++ < 40) setTimeout(find, 100);
        };
        setTimeout(find, 50);
      }}
      className="font-mono text-indigo-700 underline decoration-dotted underline-offset-2 hover:decoration-solid dark:text-indigo-300"
    >
      its call
    </a>
  );
}
