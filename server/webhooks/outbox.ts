// The webhook outbox: rows written with the run's end, POSTed signed, retried with doubling backoff, then dead-lettered.
import { hmacHex } from '../auth';
import type { CrosstalkConfig } from '../config';
import type { Logger } from '../logger';
import type { WebhookRow } from '../store/schema';
import { nowIso, type Store } from '../store/store';
import { checkWebhookUrl, guardedDispatcher } from './guard';
import { fetch as undiciFetch } from 'undici';
import { SpanKind, type Telemetry, traceparentOf } from '../telemetry/tracing';

export const SIGNATURE_HEADER = 'X-Crosstalk-Signature';

export function signBody(body: string, secret: string): string {
  return `sha256=${hmacHex(secret, body)}`;
}

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
  };
}

export class WebhookOutbox {
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private again = false;
  private stopped = false;
  private readonly inflight = new Set<string>();
  /** Connects only to the addresses its lookup checked (SSRF: no DNS rebinding between the check and the connect). */
  private get dispatcher() {
    return (this._dispatcher ??= guardedDispatcher(this.config.allowPrivateNetwork));
  }
  private _dispatcher?: ReturnType<typeof guardedDispatcher>;

  constructor(
    private readonly store: Store,
    private readonly config: CrosstalkConfig['webhooks'],
    private readonly log: Logger,
    private readonly onOutcome?: (outcome: 'delivered' | 'retry' | 'dead') => void,
    private readonly telemetry?: Telemetry,
  ) {}

  start(): void {
    this.stopped = false;
    this.kick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Deliver what is due now, then sleep until the next row is due. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.pass()
      .catch((e) => this.log.error({ err: e }, 'webhook pass failed'))
      .finally(() => {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.kick();
        } else void this.schedule();
      });
  }

  private async schedule() {
    if (this.stopped) return;
    const next = await this.store.nextWebhookDue().catch(() => undefined);
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!next) return;
    const delay = Math.max(0, Math.min(Date.parse(next) - Date.now(), 60_000));
    this.timer = setTimeout(() => this.kick(), delay);
    this.timer.unref?.();
  }

  private async pass() {
    const due = await this.store.claimDueWebhooks(nowIso(), 50, this.config.timeoutMs + 5000);
    await Promise.all(due.filter((r) => !this.inflight.has(r.id)).map((r) => this.deliver(r)));
  }

  private async deliver(row: WebhookRow) {
    this.inflight.add(row.id);
    try {
      const error = await this.post(row);
      const attempts = row.attempts + 1;
      if (!error) {
        await this.store.updateWebhook(row.id, { status: 'delivered', attempts, delivered_at: nowIso(), last_error: null });
        this.onOutcome?.('delivered');
        return;
      }
      if (attempts >= this.config.maxAttempts) {
        await this.store.updateWebhook(row.id, { status: 'dead', attempts, last_error: error });
        this.log.warn({ webhookId: row.id, runId: row.run_id, url: row.url, attempts, error }, 'webhook dead-lettered');
        this.onOutcome?.('dead');
        return;
      }
      const delay = this.config.retryBaseMs * 2 ** (attempts - 1);
      await this.store.updateWebhook(row.id, { attempts, last_error: error, next_attempt_at: new Date(Date.now() + delay).toISOString() });
      this.onOutcome?.('retry');
    } finally {
      this.inflight.delete(row.id);
    }
  }

  /** One POST; null on 2xx, else what went wrong. */
  private async post(row: WebhookRow): Promise<string | null> {
    const refused = await checkWebhookUrl(row.url, this.config.allowPrivateNetwork);
    if (refused) return refused;
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'crosstalk-webhook/1', 'x-crosstalk-delivery': row.id };
    if (row.headers) Object.assign(headers, JSON.parse(row.headers) as Record<string, string>);
    if (row.secret) headers[SIGNATURE_HEADER] = signBody(row.body, row.secret);
    // The run's trace goes on to the receiver (W3C Trace Context), through a span of this delivery when tracing is on.
    const span = row.traceparent ? this.telemetry?.start('webhook POST', row.traceparent, { 'http.request.method': 'POST', 'url.full': row.url, 'crosstalk.webhook.attempt': row.attempts + 1 }, { kind: SpanKind.CLIENT }) : undefined;
    const traceparent = span ? traceparentOf(span) : row.traceparent;
    if (traceparent) headers.traceparent = traceparent;
    let error: string | null;
    try {
      const res = await undiciFetch(row.url, { method: 'POST', headers, body: row.body, redirect: 'manual', signal: AbortSignal.timeout(this.config.timeoutMs), dispatcher: this.dispatcher });
      await res.arrayBuffer().catch(() => undefined);
      error = res.ok ? null : `receiver answered ${res.status}`;
      span?.setAttribute('http.response.status_code', res.status);
    } catch (e) {
      const err = e as Error & { cause?: { code?: string } };
      error = err.name === 'TimeoutError' ? `receiver did not answer in ${this.config.timeoutMs} ms` : `request failed: ${err.cause?.code ?? err.message}`;
    }
    this.telemetry?.end(span, error ?? undefined);
    return error;
  }
}
