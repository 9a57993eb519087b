// When failed pushes (a 5xx, a timeout, a refused connection) are tried again, durably: the push's delivery (CONTRACT
// §9, kind `push`) is the retry. Left `accepted` after a failed attempt, it is due retryDelayMs(webhooks, attempts)
// after its last change (the webhook outbox's backoff); a sweep of the store, in this process or after a restart (on
// PostgreSQL in any instance), claims a due one (compare-and-set on its updated_at) and attempts it again, each attempt
// counted on the delivery, until webhooks.maxAttempts (then `dead`).
import type { CrosstalkConfig } from '../config';
import type { DeliveryRow } from '../store/schema';
import type { Store } from '../store/store';
import { retryDelayMs } from '../webhooks/deliver';
import { PUSH_SOURCE_PATTERNS } from './resolved';
import type { PushOutcome } from './send';

export type PushState = 'delivered' | 'gone' | 'refused' | 'dead';

export interface PushAttempt {
  /** Sends once. */
  send(): Promise<PushOutcome>;
  /** Told after each attempt; `end` is set on the last one (no retry follows). */
  record(outcome: PushOutcome, attempt: number, end: PushState | null): Promise<void>;
}

/** The push a due delivery carries, ready to attempt again; null when there is none (the delivery is ended by the callee). */
export type PushAgain = (row: DeliveryRow) => Promise<PushAttempt | null>;

export interface PushRetries {
  /** Attempts a delivery now (its first, or the first of a deliveries.retry round); a failure is left to the sweep. */
  start(deliveryId: string, attemptsBefore: number, a: PushAttempt): Promise<void>;
  /** Starts sweeping the store for due retries. */
  run(again: PushAgain): void;
  stop(): void;
  /** Retries seen waiting (or being attempted) by this process. */
  waiting(): number;
}

/**
 * Attempt number within a round (1-based), from the attempts counted before it and those counted before its round
 * began (`round_from`, 0032): a deliveries.retry of a dead push or webhook starts a fresh round of
 * webhooks.maxAttempts on the same delivery (whose count keeps growing), whatever maxAttempts was in the rounds before.
 * (It was the count modulo maxAttempts: a dead webhook with 6 attempts of 3, retried under 4, got 2 POSTs.)
 */
export const roundAttempt = (attemptsBefore: number, roundFrom: number) => attemptsBefore - roundFrom + 1;

/**
 * Where a waiting push's round began (`round_from`, 0032). A round with all its attempts counted is never waiting (its
 * last failure ends it `dead`): one that looks so was reopened by deliveries.retry without its start written (its
 * process stopped in between, or before 0032) — its round begins now.
 */
const roundFrom = (row: DeliveryRow, max: number) => {
  const from = Number(row.round_from ?? 0);
  return Number(row.attempts) - from >= max ? Number(row.attempts) : from;
};

export const endOf = (r: PushOutcome, n: number, max: number): PushState | null => (r.ok ? 'delivered' : r.gone ? 'gone' : r.refused ? 'refused' : n >= max ? 'dead' : null);

/** Longest sleep between sweeps: how soon a retry left by another instance (PostgreSQL) or a dead process is seen. */
const POLL_MS = 2000;
const BATCH = 100;

export function durableRetries(store: Store, c: Pick<CrosstalkConfig['webhooks'], 'retryBaseMs' | 'maxAttempts' | 'timeoutMs'>, onError: (e: unknown) => void): PushRetries {
  const inflight = new Set<string>();
  let again: PushAgain | null = null;
  let timer: NodeJS.Timeout | null = null;
  let running = false;
  let rerun = false;
  let stopped = true;
  let seen = 0;

  /** Attempt number `n` of its round. */
  const attemptOnce = async (n: number, a: PushAttempt) => {
    const r = await a.send();
    await a.record(r, n, endOf(r, n, c.maxAttempts));
  };

  /** When a row waiting at `attempts` is due: the backoff after a failure; a first attempt that never reported gets the POST timeout too. */
  const dueAt = (row: DeliveryRow) => {
    const attempts = Number(row.attempts);
    // The attempts its round has counted (all failed: a 2xx ends it); none yet: its first is under way, or was lost.
    const failed = attempts - roundFrom(row, c.maxAttempts);
    const backoff = Date.parse(row.updated_at) + (failed > 0 ? retryDelayMs(c, failed) : c.timeoutMs + c.retryBaseMs);
    // Not before the push service's Retry-After (one of an earlier attempt is in the past by now).
    return Math.max(backoff, row.not_before ? Date.parse(row.not_before) || 0 : 0);
  };

  const sweep = async () => {
    // This service's pushes only (an item's `push:<approvalId>:<endpoint>`, its resolved note's
    // `push-resolved:<approvalId>:<endpoint>`): an A2A push is a delivery of kind `push` too, but the webhook outbox
    // retries it (`webhook_outbox:<id>`); swept here, it was found to carry no push and ended `dead` `not_retryable`,
    // even after its receiver's 2xx (probe G), and a hundred of them would have held this sweep up.
    const rows = await store.db
      .selectFrom('deliveries')
      .selectAll()
      .where('state', '=', 'accepted')
      .where('kind', '=', 'push')
      .where((eb) => eb.or(PUSH_SOURCE_PATTERNS.map((p) => eb('source', 'like', p))))
      .orderBy('updated_at')
      .limit(BATCH)
      .execute();
    const now = Date.now();
    let next = now + POLL_MS;
    let waitingNow = 0;
    for (const row of rows) {
      if (stopped) break; // stopped meanwhile: its store may be closing
      if (inflight.has(row.id)) {
        waitingNow++;
        continue;
      }
      const due = dueAt(row);
      if (due > now) {
        if (row.attempts) waitingNow++;
        next = Math.min(next, due);
        continue;
      }
      // The claim: one process per attempt (the row's updated_at moves on, so another sweep's compare-and-set misses),
      // with where its round began.
      const from = roundFrom(row, c.maxAttempts);
      const won = await store.db
        .updateTable('deliveries')
        .set({ updated_at: new Date().toISOString(), round_from: from })
        .where('id', '=', row.id)
        .where('state', '=', 'accepted')
        .where('attempts', '=', row.attempts)
        .where('updated_at', '=', row.updated_at)
        .returning('id')
        .executeTakeFirst();
      if (!won || stopped) continue;
      waitingNow++;
      inflight.add(row.id);
      void (async () => {
        const a = await again!(row);
        if (a && !stopped) await attemptOnce(roundAttempt(Number(row.attempts), from), a);
      })()
        .catch(onError)
        .finally(() => {
          inflight.delete(row.id);
          kick();
        });
    }
    seen = waitingNow;
    return rows.length === BATCH ? now : next;
  };

  const kick = () => {
    if (stopped || !again) return;
    if (running) {
      rerun = true;
      return;
    }
    running = true;
    if (timer) clearTimeout(timer);
    timer = null;
    sweep()
      .catch((e) => {
        if (!stopped) onError(e); // a sweep cut off by its own stop (the store closed under it) is no error
        return Date.now() + POLL_MS;
      })
      .then((next) => {
        running = false;
        if (stopped) return;
        if (rerun) {
          rerun = false;
          return kick();
        }
        timer = setTimeout(kick, Math.max(0, next - Date.now()));
        timer.unref?.();
      });
  };

  return {
    async start(deliveryId, attemptsBefore, a) {
      inflight.add(deliveryId);
      try {
        // A round begins here (the first, or a deliveries.retry's): its attempt numbers count from the attempts before it.
        if (attemptsBefore) await store.db.updateTable('deliveries').set({ round_from: attemptsBefore }).where('id', '=', deliveryId).where('state', '=', 'accepted').execute();
        await attemptOnce(1, a);
      } finally {
        inflight.delete(deliveryId);
      }
      kick();
    },
    run(fn) {
      again = fn;
      stopped = false;
      kick();
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
    },
    waiting: () => seen,
  };
}
