// One webhook attempt, whoever schedules it (pg-boss on PostgreSQL, the in-process dispatcher on SQLite): the
// signed POST through the SSRF guard with the run's trace, and the `webhook_outbox` row that records it
// (status pending/delivered/dead, attempts, last_error): that table stays the user-visible record.
import type { Kysely } from 'kysely';
import { fetch as undiciFetch } from 'undici';
import type { CrosstalkConfig } from '../config';
import type { Logger } from '../logger';
import type { Database, WebhookRow } from '../store/schema';
import { nowIso, type Store } from '../store/store';
import { SpanKind, type Telemetry, traceparentOf } from '../telemetry/tracing';
import { checkWebhookUrl, guardedDispatcher } from './guard';
import { signWebhook } from './signature';

export { SIGNATURE_HEADER, TIMESTAMP_HEADER, signWebhook } from './signature';

export function webhookRow(runId: string, hook: { url: string; secret?: string }, payload: unknown, key: string, traceparent?: string): WebhookRow {
  const ts = nowIso();
  return {
    id: `wh_${key}`,
    run_id: runId,
    url: hook.url,
    secret: hook.secret ?? null,
    body: JSON.stringify(payload),
    status: 'pending',
    attempts: 0,
    next_attempt_at: ts,
    last_error: null,
    created_at: ts,
    delivered_at: null,
    headers: null,
    traceparent: traceparent ?? null,
    round_from: 0,
  };
}

/** What schedules webhook attempts: pg-boss on PostgreSQL (server/jobs), an in-process loop on SQLite (./outbox). */
export interface WebhookDispatcher {
  start(): Promise<void>;
  /** Graceful: attempts in flight finish (bounded by the POST timeout); the rest wait in the database. */
  stop(): Promise<void>;
  /** Rows were committed (SQLite: look now; PostgreSQL: the engine was told in the same transaction). */
  kick(): void;
  /** Inside the transaction that writes the rows: whatever makes them run once it commits (PostgreSQL: the jobs). */
  enqueueIn?(tx: Kysely<Database>, rows: WebhookRow[]): Promise<void>;
  /** A dead row made pending again (deliveries.retry): attempt it again (PostgreSQL: its job again). */
  retry?(id: string): Promise<void>;
}

export type Outcome = 'delivered' | 'retry' | 'dead';

/** The wait after failed attempt number `attempt` (1-based) before the next one: doubling from retryBaseMs. */
export const retryDelayMs = (c: Pick<CrosstalkConfig['webhooks'], 'retryBaseMs'>, attempt: number) => c.retryBaseMs * 2 ** (attempt - 1);

/** What a row whose round ran out without a result (the last attempt's process stopped or died) is dead with. */
export const ATTEMPTS_RAN_OUT = 'attempts ran out without a result (the process of the last one stopped or died)';

export class WebhookDelivery {
  /** Connects only to the addresses its lookup checked (SSRF: no DNS rebinding between the check and the connect). */
  private get dispatcher() {
    return (this._dispatcher ??= guardedDispatcher(this.config.allowPrivateNetwork));
  }
  private _dispatcher?: ReturnType<typeof guardedDispatcher>;

  constructor(
    readonly store: Store,
    readonly config: CrosstalkConfig['webhooks'],
    readonly log: Logger,
    private readonly onOutcome?: (outcome: Outcome) => void,
    private readonly telemetry?: Telemetry,
  ) {}

  /**
   * Attempt number `attempt` (1-based) of its round (a deliveries.retry begins a new one): counts it on the row and its
   * delivery before the POST (an attempt lost with its process counts), POSTs it and records the outcome. `final`:
   * no attempt follows a failure (the row goes dead); `nextAt`: when the next one is due, set with the count (so the
   * one after a lost attempt keeps the backoff); `from`: see Store.claimWebhookAttempt. Returns the error; null when
   * delivered, or when there was nothing to attempt (the row settled meanwhile).
   */
  async attempt(row: WebhookRow, attempt: number, o: { final: boolean; nextAt?: string; from?: number; signal?: AbortSignal }): Promise<string | null> {
    const attempts = await this.store.claimWebhookAttempt(row.id, { nextAt: o.final ? undefined : o.nextAt, final: o.final, from: o.from });
    if (attempts === null) return null;
    const error = await this.post(row, attempt, o.signal);
    if (!error) {
      await this.store.updateWebhook(row.id, { status: 'delivered', delivered_at: nowIso(), last_error: null });
      this.onOutcome?.('delivered');
    } else if (o.final) {
      await this.store.updateWebhook(row.id, { status: 'dead', last_error: error });
      this.log.warn({ webhookId: row.id, runId: row.run_id, url: row.url, attempts, error }, 'webhook dead-lettered');
      this.onOutcome?.('dead');
    } else {
      await this.store.updateWebhook(row.id, { last_error: error });
      this.onOutcome?.('retry');
    }
    return error;
  }

  /** A row whose attempts ran out without one reporting (its last attempt's process died): dead, if still pending. */
  async markDead(id: string, error: string, notRetriedSince?: string): Promise<boolean> {
    const dead = await this.store.webhookDead(id, error, notRetriedSince);
    if (dead) {
      this.log.warn({ webhookId: id, error }, 'webhook dead-lettered');
      this.onOutcome?.('dead');
    }
    return dead;
  }

  /** One POST; null on 2xx, else what went wrong. */
  private async post(row: WebhookRow, attempt: number, signal?: AbortSignal): Promise<string | null> {
    const refused = await checkWebhookUrl(row.url, this.config.allowPrivateNetwork);
    if (refused) return refused;
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'crosstalk-webhook/1', 'x-crosstalk-delivery': row.id };
    if (row.headers) Object.assign(headers, JSON.parse(row.headers) as Record<string, string>);
    // Signed at each attempt: the timestamp says when this POST was made, so a retry is not refused as a replay.
    if (row.secret) Object.assign(headers, signWebhook(row.secret, row.body));
    // The run's trace goes on to the receiver (W3C Trace Context), through a span of this delivery when tracing is on.
    const span = row.traceparent ? this.telemetry?.start('webhook POST', row.traceparent, { 'http.request.method': 'POST', 'url.full': row.url, 'crosstalk.webhook.attempt': attempt }, { kind: SpanKind.CLIENT }) : undefined;
    const traceparent = span ? traceparentOf(span) : row.traceparent;
    if (traceparent) headers.traceparent = traceparent;
    let error: string | null;
    try {
      const timeout = AbortSignal.timeout(this.config.timeoutMs);
      const res = await undiciFetch(row.url, { method: 'POST', headers, body: row.body, redirect: 'manual', signal: signal ? AbortSignal.any([timeout, signal]) : timeout, dispatcher: this.dispatcher });
      await res.arrayBuffer().catch(() => undefined);
      error = res.ok ? null : `receiver answered ${res.status}`;
      span?.setAttribute('http.response.status_code', res.status);
    } catch (e) {
      const err = e as Error & { cause?: { code?: string } };
      error = err.name === 'TimeoutError' ? `receiver did not answer in ${this.config.timeoutMs} ms` : err.name === 'AbortError' ? 'the attempt was stopped (engine expiry or shutdown)' : `request failed: ${err.cause?.code ?? err.message}`;
    }
    this.telemetry?.end(span, error ?? undefined);
    return error;
  }
}
