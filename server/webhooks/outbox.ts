// SQLite's webhook dispatcher: rows written with the run's end, POSTed signed, retried with doubling backoff, then
// dead-lettered, by a loop in this process. The job engine that carries webhooks on PostgreSQL (pg-boss, see
// server/jobs) needs PostgreSQL, and SQLite is one process per data dir: an in-process loop is all it needs.
import type { CrosstalkConfig } from '../config';
import type { Logger } from '../logger';
import type { WebhookRow } from '../store/schema';
import { nowIso, type Store } from '../store/store';
import type { Telemetry } from '../telemetry/tracing';
import { roundAttempt } from '../push/retry';
import { ATTEMPTS_RAN_OUT, type Outcome, retryDelayMs, WebhookDelivery, type WebhookDispatcher } from './deliver';

export { SIGNATURE_HEADER, TIMESTAMP_HEADER, signWebhook, webhookRow, type WebhookDispatcher } from './deliver';

export class WebhookOutbox implements WebhookDispatcher {
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private again = false;
  private stopped = true;
  private pass_: Promise<void> = Promise.resolve();
  /** The attempts under way, by row: each runs on its own, so a slow receiver holds up no other webhook. */
  private readonly inflight = new Map<string, Promise<void>>();
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
    await Promise.all(this.inflight.values());
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
    // The rows being attempted are not due again until their attempt is over (its end kicks a pass).
    const next = await this.delivery.store.nextWebhookDue([...this.inflight.keys()]).catch(() => undefined);
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!next || this.stopped) return;
    const delay = Math.max(0, Math.min(Date.parse(next) - Date.now(), 60_000));
    this.timer = setTimeout(() => this.kick(), delay);
    this.timer.unref?.();
  }

  /**
   * Starts an attempt for each due row not under way, and returns: it does not wait for them. Before, a pass waited
   * for its whole batch, so one receiver that answered slowly (up to `timeoutMs`, 10 s by default) held every other
   * webhook, and every retry, that fell due meanwhile (probe C: a 200 hook waited 1.2 s behind two slow ones).
   */
  private async pass() {
    const due = await this.delivery.store.dueWebhooks(nowIso(), 50);
    for (const r of due) {
      if (this.inflight.has(r.id)) continue;
      const attempt = this.deliver(r)
        .catch((e) => this.log.error({ err: e, webhookId: r.id }, 'webhook attempt failed'))
        .finally(() => {
          this.inflight.delete(r.id);
          this.kick(); // its next attempt (or none) is due at a new time
        });
      this.inflight.set(r.id, attempt);
    }
  }

  /**
   * A dead row made pending again (deliveries.retry): its new round begins at the attempts counted so far, so it has
   * `maxAttempts` of its own whatever they were in the rounds before. (Not when an attempt of it is under way here: a
   * pass took the reopened row first, and `deliver` began its round.)
   */
  async retry(id: string): Promise<void> {
    if (!this.inflight.has(id)) {
      await this.delivery.store.db
        .updateTable('webhook_outbox')
        .set((eb) => ({ round_from: eb.ref('attempts') }))
        .where('id', '=', id)
        .where('status', '=', 'pending')
        .execute();
    }
    this.kick();
  }

  /**
   * The row's next attempt. Its `attempts` count every attempt as it began, across deliveries.retry rounds; its
   * `round_from` those before its round began: the round's attempt number follows from them (roundAttempt, as a
   * push's), and a round whose last attempt was lost with its process (SIGKILL, a crash) is dead, not begun again:
   * before, a lost attempt was never counted, so after each such loss the receiver got one more POST than
   * webhooks.maxAttempts allows, and the record said 0 (probe H). (Before 0032 the round was the count modulo
   * maxAttempts: retried after maxAttempts changed, a dead webhook got a short round — 2 POSTs of 4.)
   */
  private async deliver(row: WebhookRow) {
    const max = this.config.maxAttempts;
    let from = Number(row.round_from ?? 0);
    if (row.attempts - from >= max) {
      // Every attempt of its round counted: the last one lost with its process (it left an error, or the
      // LAST_ATTEMPT_UNDECIDED mark) — dead; or none made, the row reopened without its round's start written
      // (its process stopped in between, or it was retried before 0032) — a fresh round, from here.
      if (row.last_error !== null) {
        await this.delivery.markDead(row.id, ATTEMPTS_RAN_OUT);
        return;
      }
      from = row.attempts;
      await this.delivery.store.db.updateTable('webhook_outbox').set({ round_from: from }).where('id', '=', row.id).where('status', '=', 'pending').where('attempts', '=', row.attempts).execute();
    }
    const attempt = roundAttempt(row.attempts, from);
    const final = attempt >= max;
    const nextAt = new Date(Date.now() + retryDelayMs(this.config, attempt)).toISOString();
    await this.delivery.attempt(row, attempt, { final, nextAt, from: row.attempts });
  }
}
