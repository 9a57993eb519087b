// `agent` with an idempotency key (CONTRACT §3): the key is claimed by the write that accepts the message, a repeat
// gets the first answer; on PostgreSQL an accept cut off by a lost connection (a restart, a failover) is made again
// here, bounded, rather than answered `internal`: the claim makes that safe (a repeat finds the first's claim).
import type { Logger } from '../logger';
import { envNumber } from '../env-number.mjs';
import { isConnectionLoss } from '../store/pg-errors';
import { acceptedAnswer, type Claimant, ClaimTaken, settleClaim } from '../store/idempotency';
import type { Store } from '../store/store';
import { failpoint } from '../failpoints';
import type { AgentResult } from './types';

export interface KeyedAccept {
  claimant: Claimant;
  store: Store;
  /** PostgreSQL, several processes: the claim is tried first, and a lost connection is tried again. */
  clustered: boolean;
  start(claim: { key: string; owner: string; settled: boolean }): Promise<AgentResult>;
  log?: Logger;
  /** How long an accept cut off by a lost connection is tried again (default 30 s, `CROSSTALK_ACCEPT_RETRY_MS`). */
  retryForMs?: number;
}

/**
 * Accepts a keyed message once. PostgreSQL tries the claim first (a repeat finds it taken); SQLite looks first: its
 * accepting write is the run's insert, which it cannot take back once the run is under way (one process: nothing
 * races the look). An attempt cut off by a lost PostgreSQL connection (anywhere: the claim, the enqueue, the
 * answer's record) is tried again with backoff: its transaction rolled back (no claim: accepted afresh) or committed
 * with only its reply lost (the claim is there: its answer, or the accepted run, is the answer; the run itself, not
 * driven here, is taken in by the orphan sweep's backstop).
 */
export async function acceptKeyed(o: KeyedAccept, key: string): Promise<AgentResult> {
  const until = Date.now() + (o.retryForMs ?? envNumber('CROSSTALK_ACCEPT_RETRY_MS'));
  let taken = 0;
  let cutOff = false;
  for (let attempt = 0, wait = 50; ; attempt++) {
    try {
      if (!o.clustered || attempt > 0) {
        const seen = await o.claimant.await(key, { mineCutOff: cutOff });
        if (seen.kind === 'done') return seen.result as AgentResult;
        // Accepted, not yet answered (its process died, is slow past the wait, or this request's own attempt was
        // cut off after its commit): the accepted run is the answer.
        if (seen.kind !== 'none') {
          const res = await acceptedAnswer(o.store, seen.claim);
          if (cutOff && seen.claim.owner === o.claimant.me) await settleClaim(o.store.db, key, o.claimant.me, res);
          return res;
        }
      }
      const claim = { key, owner: o.claimant.me, settled: !o.clustered };
      const res = await o.start(claim);
      failpoint('idempotency.accepted');
      if (!claim.settled) await settleClaim(o.store.db, key, claim.owner, res);
      return res;
    } catch (e) {
      if (e instanceof ClaimTaken && taken++ < 3) continue; // another process claimed it first: its answer
      if (!o.clustered || !isConnectionLoss(e) || Date.now() >= until) throw e;
      if (!cutOff) o.log?.warn({ key, err: (e as Error).message }, 'keyed accept cut off (database connection lost); trying again');
      cutOff = true;
      await new Promise((r) => setTimeout(r, Math.min(wait, Math.max(0, until - Date.now()))));
      wait = Math.min(wait * 2, 2000);
    }
  }
}
