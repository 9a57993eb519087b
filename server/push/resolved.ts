// "Resolved" pushes (CONTRACT §7 "Notifications"): once a pushed item is no longer pending (decided anywhere, or closed
// by its run's end), each browser its push reached gets `{type: "resolved", approvalId, decision?, decidedBy?}`, so the
// notification stops offering "Allow once" / "Deny". Each is a delivery of kind `push` of its own (CONTRACT §9, source
// `push-resolved:<approvalId>:<endpoint>`), sent and retried as the item's push is (service.ts, retry.ts).
import crypto from 'node:crypto';
import { decidedByOfRow, decisionOfRow } from '../orchestrator/approvals';
import type { Store } from '../store/store';
import { resolvedPush } from './payload';

const endpointHash = (endpoint: string) => crypto.createHash('sha256').update(endpoint).digest('hex').slice(0, 16);

/** One delivery per item and browser: a repeat of the same push records nothing new. */
export const pushDeliveryId = (approvalId: string, endpoint: string) => `dlv_push_${approvalId}_${endpointHash(endpoint)}`;
/** The same for the item's "resolved" push: its id is the claim, so each browser is told once across a cluster. */
export const resolvedDeliveryId = (approvalId: string, endpoint: string) => `dlv_pushres_${approvalId}_${endpointHash(endpoint)}`;

/** `approval`: the item's push (with its action token); `resolved`: the note that it is decided (never a token). */
export type PushForm = 'approval' | 'resolved';

const PREFIX: Record<PushForm, string> = { approval: 'push', resolved: 'push-resolved' };
/** What deliveries.retry dispatches a dead resolved push on (the source's first `:` part). */
export const RESOLVED_RETRY_KEY = PREFIX.resolved;
/** The sources the retry sweep takes (SQL LIKE patterns: `-` and `:` are literal), and nothing else (an A2A push is the webhook outbox's). */
export const PUSH_SOURCE_PATTERNS = [`${PREFIX.approval}:%`, `${PREFIX.resolved}:%`] as const;

export const pushSource = (form: PushForm, approvalId: string, endpoint: string) => `${PREFIX[form]}:${approvalId}:${endpoint}`;

/** The push a delivery's source names; null for any other source (an approval id has no `:`; the endpoint may). */
export function parsePushSource(source: string | null | undefined): { form: PushForm; approvalId: string; endpoint: string } | null {
  const m = /^(push|push-resolved):([^:]+):(.+)$/.exec(source ?? '');
  if (!m) return null;
  return { form: m[1] === PREFIX.resolved ? 'resolved' : 'approval', approvalId: m[2]!, endpoint: m[3]! };
}

/**
 * RFC 8030 §5.4 Topic of an item's pushes (32 base64url characters): a resolved push replaces the item's push while
 * the push service still holds it for an offline browser, so that browser never sees the stale one.
 */
export const topicOf = (approvalId: string) => crypto.createHash('sha256').update(approvalId).digest('base64url').slice(0, 32);

/** A resolved push's plaintext, from the settled row (the same wherever and whenever it is made). */
export async function resolvedPayload(store: Store, approvalId: string): Promise<string> {
  const row = await store.getApproval(approvalId);
  return JSON.stringify(row && row.status !== 'pending' ? resolvedPush(approvalId, decisionOfRow(row), decidedByOfRow(row)) : resolvedPush(approvalId));
}

/** How far back the reconcile looks for decided items (a process that died between a decision and its pushes). */
const RECONCILE_WINDOW_MS = 3_600_000;
const RECONCILE_EVERY_MS = 30_000;
const IN_CHUNK = 500;

export interface ResolvedDeps {
  store: Store;
  /** The first attempt of a new resolved delivery (its retries are the sweep's). */
  send(deliveryId: string, approvalId: string, endpoint: string, payload: string): Promise<void>;
  onError(e: unknown): void;
}

export class ResolvedPushes {
  private timer: NodeJS.Timeout | null = null;
  private stopped = true;
  /** Decided items this process has looked at since their decision (by id, when), so each reconcile reads only new ones. */
  private readonly checked = new Map<string, number>();

  constructor(private readonly d: ResolvedDeps) {}

  /**
   * Tells the browsers (every subscription, or `endpoints`) whose push of the item was delivered that it is no longer
   * pending: one resolved delivery each, made only after the item's own push got through (so never before it), and
   * only by the process that inserts it (its id is the claim). A browser the item's push never reached, or whose push
   * is still retrying (that retry ends `failed` `already_resolved`, having sent nothing), gets nothing. Called when
   * the item is decided and when an item's push is delivered; whichever comes second finds both.
   */
  async after(approvalId: string, endpoints?: string[]): Promise<void> {
    const { store } = this.d;
    const row = await store.getApproval(approvalId);
    if (!row || row.status === 'pending') return;
    const targets = endpoints ?? (await store.db.selectFrom('push_subscriptions').select('endpoint').orderBy('created_at').execute()).map((r) => r.endpoint);
    const byId = new Map(targets.map((e) => [pushDeliveryId(approvalId, e), e]));
    const reached: string[] = [];
    const ids = [...byId.keys()];
    for (let i = 0; i < ids.length; i += IN_CHUNK) {
      const rows = await store.db.selectFrom('deliveries').select('id').where('id', 'in', ids.slice(i, i + IN_CHUNK)).where('state', '=', 'delivered').execute();
      for (const r of rows) reached.push(byId.get(r.id)!);
    }
    if (!reached.length) return;
    const made = await store.createDeliveries(
      reached.map((endpoint) => ({ id: resolvedDeliveryId(approvalId, endpoint), kind: 'push' as const, from: { sessionKey: row.session_key, runId: row.run_id }, to: { url: endpoint }, source: pushSource('resolved', approvalId, endpoint) })),
    );
    if (!made.length) return; // told already (by this process or another)
    const payload = JSON.stringify(resolvedPush(approvalId, decisionOfRow(row), decidedByOfRow(row)));
    await Promise.all(made.map((c) => this.d.send(c.row.id, approvalId, c.row.to_url!, payload)));
  }

  /**
   * Items decided in the last hour whose pushes went out, looked at once each by this process (at start, then every
   * 30 s): a decision whose process died before its resolved pushes were recorded, or one heard by no process of this
   * version, still has them sent.
   */
  async reconcile(now = Date.now()): Promise<void> {
    const since = now - RECONCILE_WINDOW_MS;
    for (const [id, at] of this.checked) if (at < since) this.checked.delete(id);
    const rows = await this.d.store.db
      .selectFrom('approvals')
      .innerJoin('push_actions', 'push_actions.approval_id', 'approvals.id')
      .select(['approvals.id as id', 'approvals.resolved_at as resolvedAt'])
      .where('approvals.status', '<>', 'pending')
      .where('approvals.resolved_at', '>=', new Date(since).toISOString())
      .orderBy('approvals.resolved_at')
      .limit(1000)
      .execute();
    for (const r of rows) {
      if (this.checked.has(r.id)) continue;
      await this.after(r.id);
      this.checked.set(r.id, Date.parse(r.resolvedAt ?? '') || now);
    }
  }

  /** Reconciles now (`track` is told of each pass, for idle()), then every 30 s until stop(). */
  start(track: (p: Promise<unknown>) => void): void {
    this.stopped = false;
    const tick = () => {
      this.timer = null;
      const pass = this.reconcile().catch(this.d.onError);
      track(pass);
      void pass.finally(() => {
        if (this.stopped) return;
        this.timer = setTimeout(tick, RECONCILE_EVERY_MS);
        this.timer.unref?.();
      });
    };
    tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
