// Webhooks on PostgreSQL, carried by the job engine (pg-boss): one job per `webhook_outbox` row, inserted in the
// transaction that writes the row (the run's end), so a crash loses nothing and a run whose end did not commit
// sends nothing. The engine dispatches (NOTIFY at commit, SKIP LOCKED: one worker per job across processes),
// retries a failed attempt with exponential backoff, expires the attempt of a process that died (any instance's
// supervisor fails it, then another process retries it), and moves a job whose retries ran out to the dead-letter
// queue. Our handler does the POST and keeps the row (the user-visible record) up to date.
import crypto from 'node:crypto';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { fromKysely, type JobInsert, type JobResult, type JobWithMetadata, type PgBoss } from 'pg-boss';
import type { CrosstalkConfig } from '../config';
import type { Logger } from '../logger';
import type { Database, WebhookRow } from '../store/schema';
import type { Store } from '../store/store';
import type { Telemetry } from '../telemetry/tracing';
import { type Outcome, WebhookDelivery, type WebhookDispatcher } from '../webhooks/deliver';
import { ENGINE, type Listener, startJobEngine } from './engine';

export const WEBHOOK_QUEUE = 'webhook';
const WEBHOOK_DEAD_QUEUE = 'webhook-dead';
/** An attempt may run this long beyond the POST timeout (guard lookup, recording) before the engine expires it. */
const EXPIRY_MARGIN_S = 2;

type Data = { id: string };

/** The job of a row: a UUID derived from the row id, so enqueueing a row twice inserts one job. */
export function webhookJobId(rowId: string): string {
  const h = crypto.createHash('sha256').update(`crosstalk.webhook:${rowId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * The engine's retry policy from `webhooks` config. pg-boss counts retry delays in whole seconds: `retryBaseMs` is
 * rounded to seconds (at least 1), and attempt n's failure waits between base·2^(n-1) and base·2^n (jitter), plus
 * up to one poll (ENGINE.pollSeconds) for a worker to see it.
 */
export function webhookPolicy(c: CrosstalkConfig['webhooks']) {
  return {
    retryLimit: c.maxAttempts - 1,
    retryDelay: Math.max(1, Math.round(c.retryBaseMs / 1000)),
    retryBackoff: true,
    expireInSeconds: Math.ceil(c.timeoutMs / 1000) + EXPIRY_MARGIN_S,
    deadLetter: WEBHOOK_DEAD_QUEUE,
  } satisfies Partial<JobInsert>;
}

export class PgWebhookDispatcher implements WebhookDispatcher {
  private boss: PgBoss | null = null;
  private readonly delivery: WebhookDelivery;

  constructor(
    private readonly o: {
      store: Store;
      config: CrosstalkConfig['webhooks'];
      log: Logger;
      pool: pg.Pool;
      pgSchema?: string;
      listener?: Listener;
      onOutcome?: (outcome: Outcome) => void;
      telemetry?: Telemetry;
    },
  ) {
    this.delivery = new WebhookDelivery(o.store, o.config, o.log, o.onOutcome, o.telemetry);
  }

  async start(): Promise<void> {
    const boss = await startJobEngine({ pool: this.o.pool, pgSchema: this.o.pgSchema, listener: this.o.listener, log: this.o.log });
    const policy = webhookPolicy(this.o.config);
    // Queue options are defaults; every job carries the policy of the process that enqueued it.
    await boss.createQueue(WEBHOOK_DEAD_QUEUE, { retryLimit: 3, retryDelay: 1, retryBackoff: true });
    await boss.createQueue(WEBHOOK_QUEUE, { ...policy, notify: true });
    const poll = { pollingIntervalSeconds: ENGINE.pollSeconds, notifyPollingIntervalSeconds: ENGINE.pollSeconds };
    await boss.work<Data, never, { batchSize: number; localConcurrency: number; burstWhenBatchFull: true; perJobResults: true; includeMetadata: true; pollingIntervalSeconds: number; notifyPollingIntervalSeconds: number }>(
      WEBHOOK_QUEUE,
      { batchSize: 5, localConcurrency: 2, burstWhenBatchFull: true, perJobResults: true, includeMetadata: true, ...poll },
      (jobs) => Promise.all(jobs.map((j) => this.attempt(j))),
    );
    await boss.work<Data, void, { includeMetadata: true; pollingIntervalSeconds: number; notifyPollingIntervalSeconds: number }>(
      WEBHOOK_DEAD_QUEUE,
      { includeMetadata: true, pollingIntervalSeconds: 2 * ENGINE.pollSeconds, notifyPollingIntervalSeconds: 2 * ENGINE.pollSeconds },
      async (jobs) => {
        for (const j of jobs) await this.deadLettered(j.data.id, j.createdOn);
      },
    );
    this.boss = boss;
    await this.adopt();
  }

  /** Graceful: attempts in flight finish (their POST timeout bounds it); an attempt cut short is retried by the engine. */
  async stop(): Promise<void> {
    const boss = this.boss;
    if (!boss) return;
    await boss.stop({ graceful: true, timeout: Math.min(this.o.config.timeoutMs + 500, 10_000), close: false });
  }

  /**
   * The engine gave up on a row's job at `at` (its dead-letter copy's creation): the row is dead — unless it was
   * retried since (deliveries.retry sets `next_attempt_at` to the retry's time), when that new round decides.
   */
  deadLettered(id: string, at: Date): Promise<boolean> {
    return this.delivery.markDead(id, 'attempts ran out without a result (the process of the last one stopped or died)', at.toISOString());
  }

  /** Nothing to do: the job's NOTIFY went out with the commit that wrote it. */
  kick(): void {}

  /**
   * A dead row retried (deliveries.retry): a job of its own, with a fresh round of attempts as on SQLite. (pg-boss's
   * retry of the spent job kept its retry count: one attempt, then dead again.)
   */
  async retry(id: string): Promise<void> {
    if (!this.boss) return;
    await this.boss.insert(WEBHOOK_QUEUE, [{ id: webhookJobId(`${id}#${Date.now()}`), data: { id }, ...webhookPolicy(this.o.config) }]);
  }

  /** In the transaction that writes the rows: their jobs. (Before start nothing is lost: start adopts pending rows.) */
  async enqueueIn(tx: Kysely<Database>, rows: WebhookRow[]): Promise<void> {
    if (!this.boss || !rows.length) return;
    await this.boss.insert(WEBHOOK_QUEUE, this.jobs(rows.map((r) => r.id)), { db: fromKysely(tx) });
  }

  private jobs(ids: string[]): JobInsert<Data>[] {
    const policy = webhookPolicy(this.o.config);
    return ids.map((id) => ({ id: webhookJobId(id), data: { id }, ...policy }));
  }

  /**
   * Pending rows without a job (written before this engine carried webhooks, or while it was not running) get one;
   * a row that has its job already is left alone (same job id: the insert does nothing).
   */
  private async adopt() {
    for (let after = ''; ; ) {
      const ids = (await this.o.store.db.selectFrom('webhook_outbox').select('id').where('status', '=', 'pending').where('id', '>', after).orderBy('id').limit(500).execute()).map((r) => r.id);
      if (!ids.length) return;
      await this.boss!.insert(WEBHOOK_QUEUE, this.jobs(ids));
      after = ids.at(-1)!;
    }
  }

  /** One attempt of one job; the engine settles it (failed: retried with backoff, or dead-lettered after the last). */
  private async attempt(job: JobWithMetadata<Data>): Promise<JobResult> {
    try {
      const row = await this.o.store.db.selectFrom('webhook_outbox').selectAll().where('id', '=', job.data.id).executeTakeFirst();
      if (!row || row.status !== 'pending') return { id: job.id, status: 'completed' }; // settled already
      const final = job.retryCount >= job.retryLimit;
      // The earliest the engine will try again (it adds up to as much again as jitter).
      const nextAt = final ? undefined : new Date(Date.now() + Math.max(1, job.retryDelay) * 1000 * 2 ** job.retryCount).toISOString();
      const error = await this.delivery.attempt(row, job.retryCount + 1, { final, nextAt, signal: job.signal });
      return error ? { id: job.id, status: 'failed', output: { message: error } } : { id: job.id, status: 'completed' };
    } catch (e) {
      this.o.log.warn({ err: e, webhookId: job.data.id }, 'webhook attempt failed');
      return { id: job.id, status: 'failed', output: { message: (e as Error).message } };
    }
  }
}
