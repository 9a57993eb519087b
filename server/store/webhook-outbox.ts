// The webhook outbox's attempt writes (webhooks and A2A pushes): each attempt counted before its POST, its outcome,
// a row dead without one, a dead row reopened; each on the outbox row and its delivery (CONTRACT §9) in one transaction.
import type { Kysely } from 'kysely';
import { advanceDeliveries, countAttempts, type DeliveryChange } from './deliveries';
import type { Database, WebhookRow } from './schema';

/** The delivery of a webhook outbox row (webhooks and A2A pushes). */
export const webhookDeliveryId = (rowId: string) => `dlv_${rowId}`;

/**
 * What a round's last attempt leaves as `last_error` while it has no result, when the row had none: a pending row
 * whose round's attempts are all counted then has an error, which tells it from a round deliveries.retry has just
 * begun (no error). Its outcome (or the dead letter) replaces it.
 */
export const LAST_ATTEMPT_UNDECIDED = 'the last attempt has no result yet (under way, or its process stopped or died)';

/** Claims one more attempt of a pending row: see Store.claimWebhookAttempt. */
export async function claimWebhookAttempt(db: Kysely<Database>, id: string, o: { nextAt?: string; final: boolean; from?: number }): Promise<number | null> {
  return db.transaction().execute(async (tx) => {
    let q = tx
      .updateTable('webhook_outbox')
      .set((eb) => ({
        attempts: eb('attempts', '+', 1),
        ...(o.nextAt ? { next_attempt_at: o.nextAt } : {}),
        ...(o.final ? { last_error: eb.fn.coalesce('last_error', eb.val(LAST_ATTEMPT_UNDECIDED)) } : {}),
      }))
      .where('id', '=', id)
      .where('status', '=', 'pending');
    if (o.from !== undefined) q = q.where('attempts', '=', o.from);
    const row = await q.returning('attempts').executeTakeFirst();
    if (!row) return null;
    await countAttempts(tx, webhookDeliveryId(id), 1);
    return Number(row.attempts);
  });
}

/**
 * A claimed attempt's outcome on a row still pending and its delivery (2xx: delivered; the round's last failure:
 * dead; another failure: its error). The attempt was counted by its claim: nothing counts here.
 */
export async function recordWebhookOutcome(db: Kysely<Database>, id: string, fields: Partial<Omit<WebhookRow, 'id' | 'attempts'>>): Promise<DeliveryChange[]> {
  return db.transaction().execute(async (tx) => {
    const u = await tx.updateTable('webhook_outbox').set(fields).where('id', '=', id).where('status', '=', 'pending').executeTakeFirst();
    if (Number(u.numUpdatedRows) !== 1) return []; // settled meanwhile (the dead letter of an attempt the engine expired)
    const did = webhookDeliveryId(id);
    const error = { code: 'channel_error', message: fields.last_error ?? 'retries exhausted' };
    if (fields.status === 'delivered') return advanceDeliveries(tx, [did], 'delivered', { error: null });
    if (fields.status === 'dead') return advanceDeliveries(tx, [did], 'dead', { error });
    if (fields.last_error) await countAttempts(tx, did, 0, error);
    return [];
  });
}

/**
 * A row whose attempts ran out without one reporting: dead, if still pending (and its delivery with it); with
 * `notRetriedSince`, only when its round began by then (a row retried since is left to its new round). Null: not.
 */
export async function webhookDead(db: Kysely<Database>, id: string, error: string, notRetriedSince?: string): Promise<DeliveryChange[] | null> {
  return db.transaction().execute(async (tx) => {
    let q = tx.updateTable('webhook_outbox').set({ status: 'dead', last_error: error }).where('id', '=', id).where('status', '=', 'pending');
    if (notRetriedSince) q = q.where('next_attempt_at', '<=', notRetriedSince);
    const u = await q.executeTakeFirst();
    if (Number(u.numUpdatedRows) !== 1) return null;
    return advanceDeliveries(tx, [webhookDeliveryId(id)], 'dead', { error: { code: 'channel_error', message: error } });
  });
}

/**
 * A dead row pending again for a new round (deliveries.retry), due now. Its `attempts` go on counting, as its
 * delivery's do (README: "its attempts keep counting"); the round's attempt number counts from the row's
 * `round_from` on SQLite (set by the outbox's retry: roundAttempt), from the round's own job on PostgreSQL.
 */
export async function reopenWebhook(db: Kysely<Database>, id: string): Promise<void> {
  await db.updateTable('webhook_outbox').set({ status: 'pending', next_attempt_at: new Date().toISOString(), last_error: null, delivered_at: null }).where('id', '=', id).where('status', '=', 'dead').execute();
}
