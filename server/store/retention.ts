// Limits on tables that would otherwise only grow: expired idempotency keys, the tool-start marks of ended runs,
// expired pairing requests (with the messages held for them) and spent push action tokens are deleted by a periodic
// sweep in every process.
import { envNumber } from '../env-number.mjs';
import type { Logger } from '../logger';
import { EXPIRING_PREFIXES, idempotencyTtlMs } from './idempotency';
import type { Store } from './store';

/** How long a pairing request stays pending (default 1 hour): `CROSSTALK_PAIRING_TTL_MS`. */
export function pairingTtlMs(env: Record<string, string | undefined> = process.env): number {
  const v = Number(env.CROSSTALK_PAIRING_TTL_MS);
  return Number.isFinite(v) && v > 0 ? v : 3600_000;
}

/** The oldest `requested_at` a pending pairing request may have and still count. */
export const pairingCutoff = (ttlMs = pairingTtlMs()) => new Date(Date.now() - ttlMs).toISOString();

const ENDED = ['ok', 'error', 'interrupted', 'merged'];

/** One sweep; the counts deleted. Safe on several processes at once (every statement is an idempotent delete). */
export async function sweepRetention(store: Store, o: { idempotencyTtlMs?: number; pairingTtlMs?: number } = {}): Promise<{ idempotency: number; toolStarts: number; pairings: number; pushTokens: number }> {
  const db = store.db;
  const keysBefore = new Date(Date.now() - (o.idempotencyTtlMs ?? idempotencyTtlMs())).toISOString();
  const keys = await db
    .deleteFrom('idempotency')
    .where('created_at', '<', keysBefore)
    .where((eb) => eb.or(EXPIRING_PREFIXES.map((p) => eb('key', 'like', `${p}%`))))
    .executeTakeFirst();
  const starts = await endedToolStarts(store).executeTakeFirst();
  const pairings = await expirePairings(store, pairingCutoff(o.pairingTtlMs));
  // A notification's action tokens outlive their item's decision (a late press is told it was decided): a day.
  const tokens = await db
    .deleteFrom('push_tokens')
    .where('created_at', '<', new Date(Date.now() - PUSH_TOKEN_TTL_MS).toISOString())
    .where((eb) => eb.not(eb.exists(eb.selectFrom('approvals').select('approvals.id').whereRef('approvals.id', '=', 'push_tokens.approval_id').where('approvals.status', '=', 'pending'))))
    .executeTakeFirst();
  return { idempotency: Number(keys.numDeletedRows), toolStarts: Number(starts.numDeletedRows), pairings, pushTokens: Number(tokens.numDeletedRows) };
}

/** How long a pushed action token is kept once its item is decided and nobody pressed it. */
const PUSH_TOKEN_TTL_MS = 86_400_000;

/**
 * The delete of the tool-start marks of ended runs, driven by the marks (a few: ten minutes' tool calls) with a lookup
 * of each one's run by key. `run_id in (select id from runs where status in …)` had SQLite list every ended run first:
 * 500,000 at 100,000 sessions, 0.6 s of CPU (2.5 s cold) on the event loop at start and every sweep.
 */
export function endedToolStarts(store: Store) {
  return store.db
    .deleteFrom('tool_starts')
    .where((eb) => eb.exists(eb.selectFrom('runs').select('runs.id').whereRef('runs.id', '=', 'tool_starts.run_id').where('runs.status', 'in', ENDED)));
}

/** Deletes pending pairing requests older than `before` and the messages held for them (one transaction). */
export async function expirePairings(store: Store, before: string, only?: { channel: string; peer: string }): Promise<number> {
  return store.db.transaction().execute(async (tx) => {
    let q = tx.selectFrom('channel_senders').select(['channel', 'peer']).where('status', '=', 'pending').where('requested_at', '<', before);
    if (only) q = q.where('channel', '=', only.channel).where('peer', '=', only.peer);
    const old = await q.limit(1000).execute();
    for (const s of old) {
      const r = await tx.deleteFrom('channel_senders').where('channel', '=', s.channel).where('peer', '=', s.peer).where('status', '=', 'pending').where('requested_at', '<', before).executeTakeFirst();
      if (Number(r.numDeletedRows)) await tx.deleteFrom('channel_held').where('channel', '=', s.channel).where('peer', '=', s.peer).execute();
    }
    return old.length;
  });
}

/** Sweeps now and then every `everyMs` (default 10 minutes) until stopped. */
export function startRetention(store: Store, log: Logger, everyMs = envNumber('CROSSTALK_RETENTION_SWEEP_MS')): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const run = () =>
    (running = sweepRetention(store)
      .then((n) => (n.idempotency || n.toolStarts || n.pairings || n.pushTokens) && log.info(n, 'retention: expired rows deleted'))
      .catch((e) => log.warn({ err: (e as Error).message }, 'retention: sweep failed')));
  run();
  const timer = setInterval(run, everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
