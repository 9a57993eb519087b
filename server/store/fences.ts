// The store's fencing (PostgreSQL leases): the epochs this process holds, and the fenced or idempotent writes of a
// run that are not part of its transcript (status, tool-start claims). Store (store.ts) builds on it.
import { type Kysely, sql } from 'kysely';
import type { Database, RunRow } from './schema';
import { ApprovalRecords } from './approval-records';
import { retryConflicts } from './pg-errors';
import { FencedError, nowIso } from './store-base';

export class FencedStore extends ApprovalRecords {
  // ── fencing ─────────────────────────────────────────────────────────────
  // The epochs of the sessions this process holds leases on (PostgreSQL). Epochs never repeat (0011_fencing: one
  // sequence), so a session deleted and created again is not fenced by its predecessor's epoch. A fence stays set
  // until the run holding it has ended or been abandoned: a process told it is dead keeps its stale epochs while
  // its runs stop, so their last writes are refused, never let through unchecked. Every write a run makes is
  // either FENCED (the session's epoch is checked under its row lock in the same statement; a process that lost
  // the lease writes nothing and gets FencedError, which ends the run quietly):
  //   the run's start (`startRun`), its own rows (`appendMessages` with `run`: its steps, steered input, its
  //   send_message rows and a delegate's notices into its session through `appendTranscript`, its compaction row),
  //   its end with the callbacks and webhooks it owes (`finishRun`), the tool-started claim (`markToolStarted`),
  //   its own status while it runs and the queued runs its lease holder merges or steers (`updateRunFenced`; also
  //   the status an MCP call's elicitation or authorization item sets, server/mcp/elicitation.ts and oauth.ts), and
  //   its events (`insertEvents`, by the epoch each one was emitted under);
  // and when this process is clustered (`leases`) and holds NO fence for the session (its state was dropped: released
  // idle, declared dead, dropped while it loaded, yet code of the run still goes on), each of those is refused
  // outright (`refuseUnfenced`: FencedError; an event of a leased run gets `NO_FENCE` (server/events/bus.ts) and is
  // dropped), never written unchecked beside the lease holder's. Unfenced, as they are no run's: SQLite (one process,
  // no leases), rows written from outside a run (a channel's mirror or notice, an inter-session row into another
  // session, `sessions.compact`); `touchSession` (store.ts) is only reached under `appendMessages`, `startRun` and
  // SQLite's `finishRun`, so it follows its caller;
  // or IDEMPOTENT BY ITS ID (a zombie's second write and the re-driver's land once):
  //   approvals (one row per run and call, `insertApproval`; settled only from pending, `settleApproval`),
  //   callbacks (ids derive from the target run; `settleCallback` after the caller turn, whose run id derives from
  //   the callback id), webhook deliveries (ids derive from what they report, inserted if absent), idempotency
  //   keys (inserted if absent), tool rules (inserted if absent); and `updateRun` from outside a run (a cancel
  //   request, a queued run ended only while still queued, a follow-up pointer), which a zombie does not make.

  protected readonly fences = new Map<string, number>();

  /**
   * Set by boot when this process is one of a cluster (PostgreSQL): its runs are driven under their sessions' leases,
   * so a run's write for a session this process holds no fence on is refused (`refuseUnfenced`), never made unchecked.
   */
  leases = false;

  /**
   * A write made by a run driven under a lease (`leased`: by default whether this process is clustered) while this
   * process holds no fence for its session (its state was dropped: released idle, declared dead, dropped while it
   * loaded): FencedError, which ends the run quietly. The lease holder's re-drive makes the write instead.
   */
  protected refuseUnfenced(key: string, leased = this.leases): void {
    if (leased && this.dialect === 'postgres' && !this.fences.has(key)) throw new FencedError(key);
  }

  setFence(key: string, epoch: number) {
    this.fences.set(key, epoch);
  }

  /** Forgets a fence; with `epoch`, only when it is still that one (a newer claim's fence stays). */
  clearFence(key: string, epoch?: number) {
    if (epoch === undefined || this.fences.get(key) === epoch) this.fences.delete(key);
  }

  fenceOf(key: string): number | undefined {
    return this.fences.get(key);
  }

  /**
   * A fenced write found the session row missing or held by a newer lease. Inside a transaction, pass it as `db`:
   * asking the pool for a second connection while holding one deadlocks once every connection is held so.
   */
  protected async lostSession(key: string, allowMissing = false, db: Kysely<Database> = this.db): Promise<void> {
    if (!(await db.selectFrom('sessions').select('key').where('key', '=', key).executeTakeFirst())) {
      if (allowMissing) return;
      throw new Error(`session ${key} was deleted`);
    }
    throw new FencedError(key);
  }

  async updateRun(id: string, fields: Partial<Omit<RunRow, 'id'>>): Promise<void> {
    await this.db.updateTable('runs').set(fields).where('id', '=', id).execute();
  }

  /** A run's write to a run row of its session, fenced by the session's lease epoch (FencedError when lost). */
  async updateRunFenced(id: string, sessionKey: string, fields: Partial<Omit<RunRow, 'id'>>): Promise<void> {
    const fence = this.fences.get(sessionKey);
    if (fence === undefined || this.dialect !== 'postgres') {
      this.refuseUnfenced(sessionKey);
      return this.updateRun(id, fields);
    }
    const cols = Object.keys(fields) as Array<keyof typeof fields>;
    if (!cols.length) return;
    // One statement: a deadlock rolls it back whole, so it is made again (`retryConflicts`).
    const r = await retryConflicts(() => sql<{ held: number }>`
      with f as (select key from sessions where key = ${sessionKey} and epoch = ${fence} for share),
      u as (update runs set ${sql.join(cols.map((c) => sql`${sql.ref(c)} = ${fields[c] ?? null}`))} where id = ${id} and exists (select 1 from f) returning id)
      select (select count(*) from f)::int as held, (select count(*) from u)::int as n`.execute(this.db));
    if (!r.rows[0]!.held) await this.lostSession(sessionKey);
  }

  /** Whether this process still holds the session's lease (true where there is no lease: SQLite, or not held here). */
  async holdsLease(sessionKey: string): Promise<boolean> {
    const fence = this.fences.get(sessionKey);
    if (fence === undefined) return true;
    const r = await this.db.selectFrom('sessions').select('epoch').where('key', '=', sessionKey).executeTakeFirst();
    return !!r && Number(r.epoch) === fence;
  }

  /**
   * Claims a tool call's start: inserted if absent, under the session's lease epoch in the same statement (fenced).
   * True: this process won and may run the tool; false: the call had started before (here, in a zombie, or in a
   * process that died), so it must not run again. FencedError when the lease is lost: nothing was claimed.
   */
  async markToolStarted(runId: string, callId: string, sessionKey: string): Promise<boolean> {
    const fence = this.fences.get(sessionKey);
    if (fence === undefined) this.refuseUnfenced(sessionKey);
    if (fence !== undefined && this.dialect === 'postgres') {
      const r = await retryConflicts(() => sql<{ held: number; won: number }>`
        with f as (select key from sessions where key = ${sessionKey} and epoch = ${fence} for share),
        i as (insert into tool_starts (run_id, call_id, started_at) select ${runId}, ${callId}, ${nowIso()} where exists (select 1 from f)
              on conflict (run_id, call_id) do nothing returning call_id)
        select (select count(*) from f)::int as held, (select count(*) from i)::int as won`.execute(this.db));
      if (!r.rows[0]!.held) await this.lostSession(sessionKey);
      return r.rows[0]!.won > 0;
    }
    const r = await this.db
      .insertInto('tool_starts')
      .values({ run_id: runId, call_id: callId, started_at: nowIso() })
      .onConflict((oc) => oc.columns(['run_id', 'call_id']).doNothing())
      .returning('call_id')
      .executeTakeFirst();
    return !!r;
  }

  async toolStarted(runId: string, callId: string): Promise<boolean> {
    return !!(await this.db.selectFrom('tool_starts').select('call_id').where('run_id', '=', runId).where('call_id', '=', callId).executeTakeFirst());
  }
}
