// SQLite's webhook dispatcher: rows written with the run's end, POSTed signed, retried with doubling backoff, then
// dead-lettered, by a loop in this process. The job engine that carries webhooks on PostgreSQL (pg-boss, see
// server/jobs) needs PostgreSQL, and SQLite is one process per data dir: an in-process loop is all it needs.
import type { CrosstalkConfig } from '../config';
import type { Logger } from '../logger';
import type { WebhookRow } from '../store/schema';
import { nowIso, type Store } from '../store/store';
import type { Telemetry } from '../telemetry/tracing';
import { type Outcome, retryDelayMs, WebhookDelivery, type WebhookDispatcher } from './deliver';

export { SIGNATURE_HEADER, TIMESTAMP_HEADER, signWebhook, webhookRow, type WebhookDispatcher } from './deliver';

export class WebhookOutbox implements WebhookDispatcher {
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private again = false;
  private stopped = true;
  private pass_: Promise<void> = Promise.resolve();
  private readonly inflight = new Set<string>();
  private readonly delivery: WebhookDelivery;

  constructor(store: Store, private readonly config: CrosstalkConfig['webhooks'], private readonly log: Logger, onOutcome?: (outcome: Outcome) => void, telemetry?: Telemetry) {
    this.delivery = new WebhookDelivery(store, config, log, onOutcome, telemetry);
  }

  async start(): Promise<void> {
    this.stopped = false;
    this.kick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.pass_;
  }

  /** Deliver what is due now, then sleep until the next row is due. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    this.pass_ = this.pass()
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
    const next = await this.delivery.store.nextWebhookDue().catch(() => undefined);
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!next || this.stopped) return;
    const delay = Math.max(0, Math.min(Date.parse(next) - Date.now(), 60_000));
    this.timer = setTimeout(() => this.kick(), delay);
    this.timer.unref?.();
  }

  private async pass() {
    const due = await this.delivery.store.dueWebhooks(nowIso(), 50);
    await Promise.all(due.filter((r) => !this.inflight.has(r.id)).map((r) => this.deliver(r)));
  }

  private async deliver(row: WebhookRow) {
    this.inflight.add(row.id);
    try {
      const attempt = row.attempts + 1;
      const delay = retryDelayMs(this.config, attempt);
      await this.delivery.attempt(row, attempt, { final: attempt >= this.config.maxAttempts, nextAt: new Date(Date.now() + delay).toISOString() });
    } finally {
      this.inflight.delete(row.id);
    }
  }
}
