// deliveries.get / .list / .retry (CONTRACT §3, §9): the service layer over the delivery records, for JSON-RPC and tRPC alike.
import { CrosstalkError } from '../errors';
import { type Delivery, getDeliveryRow, listDeliveries, reopenDead, requireDelivery, toDelivery } from '../store/deliveries';
import type { Store } from '../store/store';
import { reopenWebhook } from '../store/webhook-outbox';
import type { WebhookDispatcher } from '../webhooks/deliver';
import type { DeliveriesGetParams, DeliveriesListParams, DeliveriesRetryParams } from './schemas';

export async function deliveriesGet(store: Store, p: DeliveriesGetParams): Promise<Delivery> {
  return toDelivery(requireDelivery(await getDeliveryRow(store.db, p.deliveryId), p.deliveryId));
}

/** The deliveries a tool call started (its card in the room), oldest first (a batch in its order). */
export async function deliveriesForCall(store: Store, p: { runId: string; callId: string }): Promise<{ deliveries: Delivery[] }> {
  const rows = await store.db.selectFrom('deliveries').selectAll().where('from_run', '=', p.runId).where('from_call', '=', p.callId).orderBy('created_at').orderBy('id').limit(64).execute();
  return { deliveries: rows.map(toDelivery) };
}

export function deliveriesList(store: Store, p: DeliveriesListParams): Promise<{ deliveries: Delivery[]; next_cursor: string | null }> {
  return listDeliveries(store.db, { ...p, limit: p.limit ?? 50 });
}

/**
 * A `dead` delivery attempted again under the same id: it goes back to `accepted` (the one move back a record makes,
 * and only from `dead`), then its sender (registered by what it records) sends it again. Any other state: `not_retryable`.
 */
export async function deliveriesRetry(store: Store, p: DeliveriesRetryParams): Promise<{ status: 'ok' }> {
  const row = requireDelivery(await getDeliveryRow(store.db, p.deliveryId), p.deliveryId);
  if (row.state !== 'dead') throw new CrosstalkError('not_retryable', `delivery ${row.id} is ${row.state}; only a dead delivery is retried`);
  const again = store.deliveryRetry.get((row.source ?? '').split(':')[0] ?? '');
  if (!again) throw new CrosstalkError('not_retryable', `delivery ${row.id} (${row.kind}) keeps nothing to send again`);
  const reopened = await reopenDead(store.db, row.id);
  if (!reopened) throw new CrosstalkError('not_retryable', `delivery ${row.id} was retried meanwhile`);
  store.announce([reopened]);
  await again(reopened.row);
  return { status: 'ok' };
}

/**
 * Webhook and A2A push rows: a retried one is pending again with a fresh round of attempts, due now. Its `attempts`
 * keep counting, as the delivery's do (before, the row's went back to 0: webhooks.list said 1 where deliveries.get
 * said 4; probe H); the round's attempt number is derived (see reopenWebhook).
 */
export function registerWebhookRetry(store: Store, dispatcher: WebhookDispatcher): void {
  store.deliveryRetry.set('webhook_outbox', async (row) => {
    const id = (row.source ?? '').slice('webhook_outbox:'.length);
    await reopenWebhook(store.db, id);
    if (dispatcher.retry) await dispatcher.retry(id);
    else dispatcher.kick();
  });
}
