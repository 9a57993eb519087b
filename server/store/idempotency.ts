// Idempotency keys as claims (CONTRACT §3): a key is claimed in the write that accepts its request, answered from the
// claim on every repeat (waiting, bounded, while the claimant is still answering), and forgotten after a TTL.
import crypto from 'node:crypto';
import type { Kysely } from 'kysely';
import { CrosstalkError } from '../errors';
import { type EnqueuePg, enqueuePg, type EnqueuePgResult } from './run-writes';
import type { Database, RunRow } from './schema';
import { nowIso } from './store-base';

/** How long a key holds (default 7 days): a key repeated after that is a new request. `CROSSTALK_IDEMPOTENCY_TTL_MS`. */
export function idempotencyTtlMs(env: Record<string, string | undefined> = process.env): number {
  const v = Number(env.CROSSTALK_IDEMPOTENCY_TTL_MS);
  return Number.isFinite(v) && v > 0 ? v : 7 * 24 * 3600_000;
}

/** The key prefixes of requests' idempotency keys (others in the table, such as chat-approval records, do not expire). */
export const EXPIRING_PREFIXES = ['agent:', 'send:', 'inbound:'] as const;

/** A claim to write with the request's acceptance. `settled`: `result` is the final answer already (no second write). */
export interface IdempotencyClaim {
  key: string;
  owner: string;
  runId?: string;
  result?: unknown;
  settled?: boolean;
}

export interface ClaimRow {
  key: string;
  state: 'pending' | 'done';
  owner: string | null;
  runId: string | null;
  result: unknown;
}

/** Thrown by an accepting write whose key was claimed meanwhile (on another process): nothing was accepted. */
export class ClaimTaken extends Error {
  constructor(readonly key: string) {
    super(`idempotency key ${key} is claimed`);
  }
}

const cutoff = (ttlMs: number) => new Date(Date.now() - ttlMs).toISOString();
/** The creation time before which a claim has expired (a new claim takes its row over). */
export const claimCutoff = (ttlMs = idempotencyTtlMs()) => cutoff(ttlMs);

/**
 * Claims a key (inside the caller's transaction): inserts it, or takes over a row that has expired. True when this
 * caller holds it now. On PostgreSQL a concurrent claim of the same key waits here for the first one's transaction.
 */
export async function insertClaim(db: Kysely<Database>, c: IdempotencyClaim, ttlMs = idempotencyTtlMs()): Promise<boolean> {
  const now = nowIso();
  const values = { result: JSON.stringify(c.result ?? null), state: c.settled ? 'done' : 'pending', owner: c.settled ? null : c.owner, run_id: c.runId ?? null, created_at: now };
  const res = await db
    .insertInto('idempotency')
    .values({ key: c.key, ...values })
    .onConflict((oc) => oc.column('key').doUpdateSet(values).where('idempotency.created_at', '<', cutoff(ttlMs)))
    .executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0) === 1;
}

/**
 * Records the claim's answer (the claimant only, once). False when the claim is no longer this owner's: it was taken
 * over (this process was declared dead while it worked: paused, cut off) and the answer is the taker's to record.
 */
export async function settleClaim(db: Kysely<Database>, key: string, owner: string, result: unknown): Promise<boolean> {
  const r = await db.updateTable('idempotency').set({ state: 'done', owner: null, result: JSON.stringify(result) }).where('key', '=', key).where('owner', '=', owner).where('state', '=', 'pending').executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Lets a pending claim go (its request failed before anything was accepted or delivered): a retry starts afresh. */
export async function dropClaim(db: Kysely<Database>, key: string, owner: string): Promise<void> {
  await db.deleteFrom('idempotency').where('key', '=', key).where('owner', '=', owner).where('state', '=', 'pending').execute();
}

/** The live (unexpired) claim of a key. */
export async function readClaim(db: Kysely<Database>, key: string, ttlMs = idempotencyTtlMs()): Promise<ClaimRow | undefined> {
  const r = await db.selectFrom('idempotency').select(['key', 'state', 'owner', 'run_id', 'result']).where('key', '=', key).where('created_at', '>=', cutoff(ttlMs)).executeTakeFirst();
  return r && { key: r.key, state: r.state === 'pending' ? 'pending' : 'done', owner: r.owner, runId: r.run_id, result: JSON.parse(r.result) };
}

/** Moves a pending claim from a dead claimant to `me`: true for the one caller that took it. */
export async function takeOverClaim(db: Kysely<Database>, key: string, from: string, me: string): Promise<boolean> {
  const r = await db.updateTable('idempotency').set({ owner: me }).where('key', '=', key).where('owner', '=', from).where('state', '=', 'pending').executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export type Awaited = { kind: 'none' } | { kind: 'done'; result: unknown } | { kind: 'orphaned' | 'pending'; claim: ClaimRow };

/** SQLite: one id per opened store (a runtime started again on the same data dir is another claimant). */
const localInstances = new WeakMap<object, string>();

/**
 * The claimant's identity and liveness: on PostgreSQL the cluster's process id (alive while its `processes` row
 * says so); on SQLite (one process per data dir) this process's instance id, so a pending claim of another is a
 * dead process's.
 */
export class Claimant {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clusterId: () => string | null,
    private readonly waitMs = 15_000,
  ) {}

  get me(): string {
    const id = this.clusterId();
    if (id) return id;
    let local = localInstances.get(this.db);
    if (!local) localInstances.set(this.db, (local = `local_${crypto.randomUUID()}`));
    return local;
  }

  async alive(owner: string): Promise<boolean> {
    if (owner === this.me) return true;
    if (!this.clusterId()) return false;
    const r = await this.db.selectFrom('processes').select('status').where('id', '=', owner).executeTakeFirst();
    return r?.status === 'alive';
  }

  /**
   * A repeat's view of a key: none (claim it), its answer, or still pending when the wait is over (`pending`: its
   * claimant lives; `orphaned`: its claimant died before answering, or with `mineCutOff` is this claimant).
   */
  async await(key: string, o: { mineCutOff?: boolean } = {}): Promise<Awaited> {
    const end = Date.now() + this.waitMs;
    for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
      const c = await readClaim(this.db, key);
      if (!c) return { kind: 'none' };
      if (c.state === 'done') return { kind: 'done', result: c.result };
      // `mineCutOff`: a pending claim of this claimant is the caller's own attempt, cut off (no one else answers it).
      if (!c.owner || (o.mineCutOff && c.owner === this.me) || !(await this.alive(c.owner))) return { kind: 'orphaned', claim: c };
      if (Date.now() > end) return { kind: 'pending', claim: c };
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/** A repeat that found its key's first request still being answered past the wait. */
export const stillPending = (key: string) => new CrosstalkError('timeout', `the first request with idempotency key ${key.replace(/^[a-z]+:/, '')} is still being answered; retry later`);

/**
 * PostgreSQL: a message accepted with its idempotency key claimed, in one transaction. The claim comes first, so a
 * repeat arriving at another process at the same moment waits on it and then finds the key taken (null: nothing
 * was written). A message refused (`reject` on a busy session) rolls its claim back: a retry is a new attempt.
 */
export async function enqueueClaimedPg(db: Kysely<Database>, o: EnqueuePg, claim: { key: string; owner: string; settled?: boolean }): Promise<EnqueuePgResult | null> {
  let refused: EnqueuePgResult | undefined;
  const started = { runId: o.row.id, status: 'started' };
  try {
    return await db.transaction().execute(async (tx) => {
      // Written as answered ("started", the common case: nothing to settle later), corrected below when it is not:
      // no one sees it before the commit.
      if (!(await insertClaim(tx, { ...claim, runId: o.row.id, result: started, settled: true }))) return null;
      const r = await enqueuePg(tx, o);
      if (!r.inserted) {
        refused = r;
        throw new ClaimTaken(claim.key); // rolls back; answered below
      }
      claim.settled = r.started;
      // Otherwise the answer known so far, pending: the orchestrator settles the final one (queued, steered,
      // collected), and a repeat gets this one if this process dies first.
      if (!r.started)
        await tx
          .updateTable('idempotency')
          .set({ state: 'pending', owner: claim.owner, result: JSON.stringify({ runId: o.row.id, status: r.mode === 'interrupt' ? 'started' : 'queued' }) })
          .where('key', '=', claim.key)
          .execute();
      return r;
    });
  } catch (e) {
    if (refused) return refused;
    throw e;
  }
}

/**
 * The answer to an `agent` key whose claimant did not record one (it died between accepting and answering, or is
 * still answering past the wait): the run accepted with the claim, as the claim's answer-so-far or the run row says.
 */
export async function acceptedAnswer(store: { getRun(id: string): Promise<RunRow | undefined> }, claim: ClaimRow): Promise<{ runId: string; status: 'started' | 'queued' | 'steered' }> {
  const known = claim.result as { runId?: string; status?: 'started' | 'queued' | 'steered' } | null;
  const row = claim.runId ? await store.getRun(claim.runId) : undefined;
  if (!row) {
    if (known?.runId && known.status) return { runId: known.runId, status: known.status };
    throw new CrosstalkError('internal', `the run accepted with idempotency key ${claim.key} is missing`);
  }
  const steerInto = (row.origin ? (JSON.parse(row.origin) as { steerInto?: string }) : {}).steerInto;
  if (steerInto) return { runId: steerInto, status: 'steered' };
  if (row.status === 'merged' && row.merged_into) return { runId: row.merged_into, status: 'queued' };
  if (known?.runId === row.id && known.status) return { runId: row.id, status: known.status };
  return { runId: row.id, status: row.status === 'queued' ? 'queued' : 'started' };
}
