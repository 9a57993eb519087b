// Web Push for pending items (CONTRACT §3 `push.*`, §7 "Notifications"): subscriptions, one push per new pending item to
// every browser, the one-time action token that lets a notification's "Allow once" / "Deny" resolve a tool item, and
// (resolved.ts) the "resolved" push that ends that notification once the item is decided anywhere.
import crypto from 'node:crypto';
import { sql } from 'kysely';
import type { CrosstalkConfig } from '../config';
import { CrosstalkError, errorMessage } from '../errors';
import type { EventBus } from '../events/bus';
import type { Logger } from '../logger';
import type { DecidedBy, Decision } from '../orchestrator/approvals';
import { toPendingApproval } from '../orchestrator/approvals';
import { parentChains } from '../gateway/room';
import type { DeliveryRow } from '../store/schema';
import { nowIso, type Store } from '../store/store';
import { checkWebhookUrl, guardedDispatcher } from '../webhooks/guard';
import { type VapidKeys, loadVapidKeys } from './keys';
import { approvalPush, MAX_PLAINTEXT } from './payload';
import { parsePushSource, pushDeliveryId, type PushForm, pushSource, RESOLVED_RETRY_KEY, ResolvedPushes, resolvedPayload, topicOf } from './resolved';
import { durableRetries, type PushAttempt, type PushRetries, type PushState } from './retry';
import { type PushOutcome, sendPush } from './send';

export { pushDeliveryId } from './resolved';

export interface PushSubscriptionInput {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export interface PushDeps {
  store: Store;
  bus: EventBus;
  log: Logger;
  config: CrosstalkConfig;
  /** Resolves an approval as the orchestrator does for every other decider. */
  resolve(approvalId: string, decision: Decision, reason: string | undefined, by: DecidedBy): Promise<void>;
  retries?: PushRetries;
  /** Told of every push's end state (metrics, tests). */
  onOutcome?: (state: PushState, approvalId: string, endpoint: string) => void;
}

/** The decisions a notification's actions make (tool items only). */
export const PUSH_DECISIONS = ['allow_once', 'deny'] as const;
export type PushDecision = (typeof PUSH_DECISIONS)[number];

/** Browsers one server pushes to; a subscribe past it is refused (limit_exceeded). */
export const MAX_SUBSCRIPTIONS = 1000;
/** VAPID `sub` (RFC 8292 §2.1): a contact for the push service's operator. */
export const DEFAULT_VAPID_SUBJECT = 'mailto:crosstalk@localhost.invalid';

const hashToken = (t: string) => crypto.createHash('sha256').update(t).digest('hex');

export class PushService {
  private keys: VapidKeys | null = null;
  private off: (() => void) | null = null;
  private readonly work = new Set<Promise<unknown>>();
  private readonly retries: PushRetries;
  private dispatcher?: ReturnType<typeof guardedDispatcher>;
  /** The message of each push this process is still trying (a retry here sends the same token; after a restart, a fresh one). */
  private readonly payloads = new Map<string, string>();
  private readonly resolved: ResolvedPushes;

  constructor(private readonly d: PushDeps) {
    this.retries = d.retries ?? durableRetries(d.store, d.config.webhooks, (e) => d.log.warn({ err: errorMessage(e) }, 'push retry failed'));
    this.resolved = new ResolvedPushes({
      store: d.store,
      send: (deliveryId, approvalId, endpoint, payload) => this.deliver(deliveryId, 0, 'resolved', approvalId, endpoint, payload),
      onError: (e) => d.log.warn({ err: errorMessage(e) }, 'resolved pushes not reconciled'),
    });
  }

  /** Loads (or makes, once) the VAPID keys and starts pushing each new pending item this process records. */
  async start(): Promise<void> {
    this.keys = await loadVapidKeys(this.d.store);
    this.off = this.d.bus.onEvent((ev) => {
      if (ev.stream !== 'approval' || typeof ev.data.approvalId !== 'string') return;
      // Decided anywhere else (the room, chat, the reviewer, a run's end), its tokens stay, so that a notification
      // pressed afterwards says "It was already decided" (`already_resolved`) rather than "Open crosstalk to decide it"
      // (a deleted token read as a wrong one, `forbidden`); a token decides nothing once its item is no longer pending,
      // and the retention sweep deletes the ones never pressed (retention.ts).
      if (ev.data.phase === 'requested') this.track(this.notify(ev.data.approvalId));
      // No longer pending, however (resolve, a notification, chat, a cancelled or ended run, a deleted
      // session): each browser its push reached is told, so its notification stops offering actions.
      else if (ev.data.phase === 'resolved') this.track(this.resolved.after(ev.data.approvalId));
    });
    this.d.store.deliveryRetry.set('push', (row) => this.retryDead(row));
    this.d.store.deliveryRetry.set(RESOLVED_RETRY_KEY, (row) => this.retryDead(row));
    // Retries waiting in the store (this process's, one that stopped or died, or on PostgreSQL another instance's).
    this.retries.run((row) => this.again(row));
    // Decisions whose resolved pushes a stopped or dead process never recorded.
    this.resolved.start((p) => this.track(p));
  }

  stop(): void {
    this.off?.();
    this.off = null;
    this.retries.stop();
    this.resolved.stop();
  }

  /** Resolves when the pushes started so far have had their first attempt. */
  async idle(): Promise<void> {
    while (this.work.size) await Promise.allSettled([...this.work]);
  }

  waitingRetries(): number {
    return this.retries.waiting();
  }

  private track(p: Promise<unknown>) {
    const q = p.catch((e) => this.d.log.warn({ err: errorMessage(e) }, 'push failed'));
    this.work.add(q);
    void q.finally(() => this.work.delete(q));
  }

  private async vapid(): Promise<VapidKeys> {
    return (this.keys ??= await loadVapidKeys(this.d.store));
  }

  async vapidKey(): Promise<{ publicKey: string }> {
    return { publicKey: (await this.vapid()).publicKey };
  }

  async subscribe(sub: PushSubscriptionInput): Promise<{ status: 'ok' }> {
    const refused = await checkWebhookUrl(sub.endpoint, this.d.config.webhooks.allowPrivateNetwork);
    if (refused) {
      const message = refused.replace(/^webhook/, 'push endpoint');
      throw new CrosstalkError('invalid_request', message, [{ path: 'subscription.endpoint', message }]);
    }
    // The count and the insert are one transaction, one subscribe at a time (PostgreSQL: a transaction-level advisory
    // lock; SQLite's one connection runs transactions one by one): 1,100 at once on PostgreSQL stored 1,009.
    await this.d.store.db.transaction().execute(async (db) => {
      if (this.d.store.dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext('crosstalk.push.subscribe'))`.execute(db);
      const known = await db.selectFrom('push_subscriptions').select('endpoint').where('endpoint', '=', sub.endpoint).executeTakeFirst();
      if (!known) {
        const { n } = await db.selectFrom('push_subscriptions').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
        if (Number(n) >= MAX_SUBSCRIPTIONS) throw new CrosstalkError('limit_exceeded', `at most ${MAX_SUBSCRIPTIONS} push subscriptions`);
      }
      const ts = nowIso();
      await db
        .insertInto('push_subscriptions')
        .values({ endpoint: sub.endpoint, p256dh: sub.keys.p256dh, auth: sub.keys.auth, created_at: ts, updated_at: ts })
        .onConflict((oc) => oc.column('endpoint').doUpdateSet({ p256dh: sub.keys.p256dh, auth: sub.keys.auth, updated_at: ts }))
        .execute();
    });
    return { status: 'ok' };
  }

  async unsubscribe(endpoint: string): Promise<{ status: 'ok' }> {
    await this.d.store.db.deleteFrom('push_subscriptions').where('endpoint', '=', endpoint).execute();
    return { status: 'ok' };
  }

  /**
   * Pushes a new pending item to every subscription, once across the cluster: the item's push_actions row is the claim
   * (the process that inserts it sends). Each browser's push is a delivery of kind `push` (CONTRACT §9).
   */
  async notify(approvalId: string): Promise<void> {
    const subs = await this.d.store.db.selectFrom('push_subscriptions').selectAll().orderBy('created_at').execute();
    if (!subs.length) return; // no browser asked: nothing to claim or record
    const row = await this.d.store.getApproval(approvalId);
    if (!row || row.status !== 'pending') return;
    const claimed = await this.d.store.db
      .insertInto('push_actions')
      .values({ approval_id: approvalId, created_at: nowIso() })
      .onConflict((oc) => oc.column('approval_id').doNothing())
      .returning('approval_id')
      .executeTakeFirst();
    if (!claimed) return; // pushed already (a resumed run asks again)
    const payload = await this.payload(approvalId);
    if (!payload) return;
    await Promise.all(
      subs.map(async (sub) => {
        const deliveryId = await this.d.store.createPush({
          id: pushDeliveryId(approvalId, sub.endpoint),
          from: { sessionKey: row.session_key, runId: row.run_id },
          to: { url: sub.endpoint },
          source: pushSource('approval', approvalId, sub.endpoint),
        });
        await this.deliver(deliveryId, 0, 'approval', approvalId, sub.endpoint, payload);
      }),
    );
  }

  /** The item's §7 JSON, with a fresh action token for a `tool` item (its hash stored); null once it is not pending. */
  private async payload(approvalId: string): Promise<string | null> {
    const row = await this.d.store.getApproval(approvalId);
    if (!row || row.status !== 'pending') return null;
    const item = toPendingApproval(row);
    let token: string | undefined;
    if (item.kind === 'tool') {
      token = crypto.randomBytes(32).toString('base64url');
      await this.d.store.db.insertInto('push_tokens').values({ token_hash: hashToken(token), approval_id: approvalId, created_at: nowIso() }).execute();
    }
    const chain = (await parentChains(this.d.store, [item.sessionKey])).get(item.sessionKey) ?? [item.sessionKey];
    let body = approvalPush(item, chain, token);
    // A deep chain is shortened in the middle so the message fits one push.
    while (JSON.stringify(body).length > MAX_PLAINTEXT && body.parentChain.length > 2) body = { ...body, parentChain: [body.parentChain[0]!, ...body.parentChain.slice(2)] };
    return JSON.stringify(body);
  }

  /** The first attempt of a round of one push delivery (retries come from the store's sweep), recorded on the delivery. */
  private async deliver(deliveryId: string, attemptsBefore: number, form: PushForm, approvalId: string, endpoint: string, payload: string): Promise<void> {
    this.payloads.set(deliveryId, payload);
    await this.retries.start(deliveryId, attemptsBefore, await this.attemptOf(deliveryId, form, approvalId, endpoint, payload));
  }

  /**
   * A due retry found in the store: the same message when this process sent the first, else a fresh one (an item's
   * push: a fresh token, or nothing once it is decided; a resolved push: the same note, never a token).
   */
  private async again(row: DeliveryRow): Promise<PushAttempt | null> {
    const src = parsePushSource(row.source);
    if (!src) {
      await this.d.store.markAttempt(row.id, { ok: false, final: true, error: { code: 'not_retryable', message: `delivery ${row.id} keeps no push to send again` } });
      return null;
    }
    const { form, approvalId, endpoint } = src;
    let payload = this.payloads.get(row.id);
    if (!payload && form === 'resolved') payload = await resolvedPayload(this.d.store, approvalId);
    if (!payload) {
      payload = (await this.payload(approvalId)) ?? undefined;
      if (!payload) {
        await this.d.store.markAttempt(row.id, { ok: false, final: true, error: { code: 'already_resolved', message: `approval ${approvalId} is no longer pending` } });
        return null;
      }
      this.payloads.set(row.id, payload);
    }
    return this.attemptOf(row.id, form, approvalId, endpoint, payload);
  }

  private async attemptOf(deliveryId: string, form: PushForm, approvalId: string, endpoint: string, payload: string): Promise<PushAttempt> {
    const vapid = await this.vapid();
    const opts = {
      vapid,
      subject: process.env.CROSSTALK_VAPID_SUBJECT || DEFAULT_VAPID_SUBJECT,
      allowPrivateNetwork: this.d.config.webhooks.allowPrivateNetwork,
      timeoutMs: this.d.config.webhooks.timeoutMs,
      topic: topicOf(approvalId),
      dispatcher: (this.dispatcher ??= guardedDispatcher(this.d.config.webhooks.allowPrivateNetwork)),
    };
    return {
      send: () => this.attempt(form, approvalId, endpoint, payload, opts),
      record: async (r, n, end) => {
        if (end) this.payloads.delete(deliveryId);
        await this.record(deliveryId, approvalId, endpoint, r, n, end);
        // The item's push got through: if it was decided meanwhile (before this 2xx was recorded), say so now.
        if (form === 'approval' && end === 'delivered') this.track(this.resolved.after(approvalId, [endpoint]));
      },
    };
  }

  private async attempt(form: PushForm, approvalId: string, endpoint: string, payload: string, opts: Parameters<typeof sendPush>[2]): Promise<PushOutcome> {
    // A retry of an item that is no longer pending has nothing left to say (a resolved push says just that).
    const row = form === 'approval' ? await this.d.store.getApproval(approvalId) : null;
    if (form === 'approval' && (!row || row.status !== 'pending')) return { ok: false, gone: false, refused: true, code: 'already_resolved', error: `approval ${approvalId} is no longer pending` };
    // Nor one to a browser that unsubscribed (or was dropped) since.
    const sub = await this.d.store.db.selectFrom('push_subscriptions').selectAll().where('endpoint', '=', endpoint).executeTakeFirst();
    if (!sub) return { ok: false, gone: false, refused: true, code: 'unknown_delivery', error: 'the browser unsubscribed' };
    return sendPush({ endpoint, keys: { p256dh: sub.p256dh, auth: sub.auth } }, payload, opts);
  }

  private async record(deliveryId: string, approvalId: string, endpoint: string, r: PushOutcome, attempts: number, end: PushState | null): Promise<void> {
    const origin = (() => {
      try {
        return new URL(endpoint).origin;
      } catch {
        return '?';
      }
    })();
    if (r.ok) await this.d.store.markAttempt(deliveryId, { ok: true });
    // An item decided before its push went out: the push has nothing left to say, so it ends `failed`, not `dead`
    // (the board lists dead deliveries under Failed with a Retry button, and a retry could not send it either).
    else
      await this.d.store.markAttempt(deliveryId, {
        ok: false,
        final: end !== null,
        error: { code: r.code ?? (r.refused ? 'forbidden' : 'channel_error'), message: r.error },
        // Decided before it went: nothing was sent, no attempt is counted (probe Q: attempts 2 for one request).
        ...(r.code === 'already_resolved' ? { end: 'failed' as const, sent: false as const } : {}),
        ...(r.retryAfterMs !== undefined ? { notBefore: new Date(Date.now() + r.retryAfterMs).toISOString() } : {}),
      });
    if (end === 'gone') {
      // 404/410: the browser unsubscribed or the subscription expired (RFC 8030 §7.3): it is dropped.
      await this.d.store.db.deleteFrom('push_subscriptions').where('endpoint', '=', endpoint).execute();
      this.d.log.info({ approvalId, deliveryId, push: origin, status: r.ok ? undefined : r.status }, 'push subscription gone: dropped');
    } else if (end === 'delivered') this.d.log.debug({ approvalId, deliveryId, push: origin, attempts }, 'push delivered');
    else if (end) this.d.log.warn({ approvalId, deliveryId, push: origin, attempts, state: end, error: r.ok ? undefined : r.error }, 'push not delivered');
    if (end) this.d.onOutcome?.(end, approvalId, endpoint);
  }

  /**
   * deliveries.retry of a dead push: a fresh round of attempts under the same id; an item's push with a fresh action
   * token (refused once the item is decided), a resolved push with its note again (its item is decided by definition).
   */
  private async retryDead(row: { id: string; source: string | null; attempts: number }): Promise<void> {
    const src = parsePushSource(row.source);
    if (!src) throw new CrosstalkError('not_retryable', `delivery ${row.id} keeps no push to send again`);
    const { form, approvalId, endpoint } = src;
    if (form === 'resolved') return this.track(this.deliver(row.id, Number(row.attempts), form, approvalId, endpoint, await resolvedPayload(this.d.store, approvalId)));
    const payload = await this.payload(approvalId);
    // Decided since: nothing to push. It ends `failed` (reopened for this retry; no attempt counted), and the retry
    // is refused with why.
    if (!payload) {
      const error = { code: 'already_resolved', message: `approval ${approvalId} is no longer pending: there is nothing left to push` };
      await this.d.store.advanceDeliveries([row.id], 'failed', { error });
      throw new CrosstalkError('not_retryable', `delivery ${row.id}: ${error.message}`);
    }
    this.track(this.deliver(row.id, Number(row.attempts), form, approvalId, endpoint, payload));
  }

  /**
   * A notification's action: the item's one-time token, checked against its stored hash, resolves a pending `tool` item
   * (`decidedBy: {type: "push"}`). A wrong token is `forbidden`; an item resolved anywhere else is `already_resolved`.
   */
  async act(approvalId: string, token: string, decision: PushDecision): Promise<{ status: 'ok' }> {
    const row = await this.d.store.db.selectFrom('push_tokens').select(['approval_id', 'token_hash']).where('token_hash', '=', hashToken(token)).executeTakeFirst();
    // Looked up by its hash, then compared in constant time with the approval it names.
    const a = Buffer.from(row?.approval_id ?? '');
    const b = Buffer.from(approvalId);
    if (!row || a.length !== b.length || !crypto.timingSafeEqual(a, b)) throw new CrosstalkError('forbidden', 'this action token does not answer that approval');
    const approval = await this.d.store.getApproval(approvalId);
    // Decided (here, or anywhere else first): the token decides nothing more, and stays until the retention sweep
    // (a day), so a later press, of this notification or of the same item's on another browser, is told so.
    if (!approval || approval.status !== 'pending') throw new CrosstalkError('already_resolved', `approval ${approvalId} is already ${approval?.status ?? 'gone'}`);
    await this.d.resolve(approvalId, decision, undefined, { type: 'push' });
    return { status: 'ok' };
  }
}
