// Gateway processes sharing one PostgreSQL: registration, liveness (an advisory lock held for life, plus a
// heartbeat), session leases with fencing epochs, control messages to a session's owner (NOTIFY), event
// wake-ups, and the sweep that releases a dead process's sessions so the living take them over.
import crypto from 'node:crypto';
import os from 'node:os';
import { type Kysely, sql } from 'kysely';
import type pg from 'pg';
import { envNumber } from '../env-number.mjs';
import type { Logger } from '../logger';
import type { DecidedBy } from '../orchestrator/approvals';
import type { Database, ProcessesTable, RunRow } from '../store/schema';
import { type EnqueuePg, enqueuePg, type EnqueuePgResult, identityAlive } from '../store/run-writes';
import { ClaimTaken, enqueueClaimedPg } from '../store/idempotency';
import { retryConflicts } from '../store/pg-errors';
import { freeSessionsOf, freeSessionsOfGone, NEXT_EPOCH } from './lease-sql';

export type ControlMessage =
  | { kind: 'work'; to: string; sessionKey: string }
  | { kind: 'cancel'; to: string; sessionKey: string; runId: string }
  | { kind: 'approval'; to: string; sessionKey: string; approvalId: string; by?: DecidedBy }
  | { kind: 'events' }
  /** To every process: sessions were let go (a graceful stop): sweep for them now rather than at the next sweep. */
  | { kind: 'orphans' };

export interface ClusterHooks {
  onControl(msg: ControlMessage): void;
  /** The event log grew somewhere (or may have: after a reconnect). */
  onEvents(): void;
  /** Sessions may be waiting for an owner (a process died, or one stopped): try to claim them. */
  onOrphans(): void;
  /** This process was declared dead by the others (its connection was lost for too long): drop local work. */
  onFenced(): void;
  /** This process declared another one dead (it marked it so: once per death in the cluster). */
  onDeath?(processId: string): void;
}


export const LIVENESS = {
  sweepMs: envNumber('CROSSTALK_SWEEP_MS'),
  heartbeatMs: envNumber('CROSSTALK_HEARTBEAT_MS'),
  /** A process whose heartbeat is this old is dead even if its lock still looks held (machine loss). */
  deadAfterMs: envNumber('CROSSTALK_DEAD_AFTER_MS'),
};

const hash31 = (s: string) => crypto.createHash('sha1').update(s).digest().readUInt32BE(0) & 0x7fffffff;
/**
 * The first key of every advisory lock (and the NOTIFY channel's name) of the cluster in `schema`: advisory locks are
 * the whole database's, so two clusters in one database tell theirs apart by it (a test or an operator picking a
 * process's liveness lock from pg_locks matches it too).
 */
export const clusterNamespace = (schema: string | null | undefined) => hash31(`crosstalk:${schema ?? 'public'}`);
const dbNowMs = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

export class Cluster {
  id = '';
  private lockKey = 0;
  /** Advisory-lock namespace and NOTIFY channel: per schema, so test schemas on one database stay apart. */
  private readonly ns: number;
  readonly channel: string;
  private client: pg.Client | null = null;
  private timers: NodeJS.Timeout[] = [];
  private stopped = false;
  private reconnecting = false;
  private hooks!: ClusterHooks;
  private info: { url?: string } = {};

  constructor(
    private readonly db: Kysely<Database>,
    private readonly pgInfo: { connect: pg.ClientConfig; schema?: string },
    private readonly log: Logger,
  ) {
    this.ns = clusterNamespace(pgInfo.schema);
    this.channel = `crosstalk_${this.ns.toString(36)}`;
  }

  async start(hooks: ClusterHooks, info: { url?: string } = {}): Promise<void> {
    this.hooks = hooks;
    this.info = info;
    await this.register();
    this.timers.push(setInterval(() => void this.sweep(), LIVENESS.sweepMs));
    this.timers.push(setInterval(() => void this.heartbeat(), LIVENESS.heartbeatMs));
    for (const t of this.timers) t.unref();
  }

  /** A fresh identity: the advisory lock first (so no sweeper sees us registered but unlocked), then the row. */
  private async register(): Promise<void> {
    const { default: PgDriver } = await import('pg');
    const client = new PgDriver.Client(this.pgInfo.connect);
    client.on('error', (e) => this.lost(client, e));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    try {
      await client.connect();
      const key = Number((await client.query<{ k: string }>('select nextval($1::regclass) as k', [`${this.pgInfo.schema ? `${this.pgInfo.schema}.` : ''}process_lock_keys`])).rows[0]!.k) & 0x7fffffff;
      await client.query('select pg_advisory_lock($1, $2)', [this.ns, key]);
      await this.subscribe(client);
      const id = `p_${crypto.randomUUID().slice(0, 13)}`;
      await this.db
        .insertInto('processes')
        .values({ id, lock_key: key, status: 'alive', host: os.hostname(), pid: process.pid, url: this.info.url ?? null, started_at: new Date().toISOString(), heartbeat_ms: dbNowMs as unknown as number })
        .execute();
      // Only now is the new identity used (claims are made under it): its row and lock exist.
      this.client = client;
      this.lockKey = key;
      this.id = id;
    } catch (e) {
      // Half registered (PostgreSQL went away meanwhile): drop the connection and its lock; the caller retries.
      if (this.client !== client) await client.end().catch(() => undefined);
      throw e;
    }
    this.log.info({ processId: this.id }, 'cluster: process registered');
  }

  /**
   * Registers again (a fresh identity) until it works: after this process was declared dead, or when it found
   * itself with no liveness connection and no reconnect under way. Never leaves the process unregistered.
   */
  private reRegister(): void {
    if (this.stopped || this.reconnecting) return;
    this.reconnecting = true;
    void (async () => {
      for (let delay = 200; !this.stopped; delay = Math.min(delay * 2, 5000)) {
        try {
          await this.register();
          this.reconnecting = false;
          this.reconnected();
          return;
        } catch (err) {
          this.log.warn({ err: (err as Error).message }, 'cluster: could not register again; retrying');
        }
        await new Promise((r) => setTimeout(r, delay));
      }
      this.reconnecting = false;
    })();
  }

  setUrl(url: string) {
    this.info.url = url;
    void this.db.updateTable('processes').set({ url }).where('id', '=', this.id).execute().catch(() => undefined);
  }

  /** LISTENs on a (new) liveness connection: our channel and every channel a listener asked for. */
  private async subscribe(c: pg.Client) {
    await c.query(`listen ${this.channel}`);
    for (const ch of this.listeners.keys()) await c.query(`listen "${ch}"`);
    c.on('notification', (n) => {
      if (n.channel === this.channel) return this.onNotification(n.payload);
      const l = this.listeners.get(n.channel);
      if (l && n.payload !== undefined) l.fn(n.payload);
    });
  }

  private readonly listeners = new Map<string, { fn: (payload: string) => void; onReconnect: () => void }>();

  /**
   * Another LISTEN on this process's liveness connection (the job engine's wake-ups), so it needs no connection of
   * its own. After a reconnect `onReconnect` runs: notifications sent meanwhile were missed.
   */
  async listen(channel: string, fn: (payload: string) => void, onReconnect: () => void): Promise<{ close(): Promise<void> }> {
    if (!/^[a-z0-9_]+$/.test(channel)) throw new Error(`cluster: bad channel name ${channel}`);
    this.listeners.set(channel, { fn, onReconnect });
    await this.client?.query(`listen "${channel}"`);
    return {
      close: async () => {
        this.listeners.delete(channel);
        await this.client?.query(`unlisten "${channel}"`).catch(() => undefined);
      },
    };
  }

  private reconnected() {
    this.hooks.onEvents();
    this.hooks.onOrphans();
    for (const l of this.listeners.values()) l.onReconnect();
  }

  private onNotification(payload: string | undefined) {
    if (!payload) return;
    let msg: ControlMessage;
    try {
      msg = JSON.parse(payload) as ControlMessage;
    } catch {
      return;
    }
    if (msg.kind === 'events') return this.hooks.onEvents();
    if (msg.kind === 'orphans') return this.hooks.onOrphans();
    if (msg.to !== this.id) return;
    try {
      this.hooks.onControl(msg);
    } catch (e) {
      this.log.error({ err: e }, 'cluster: control message failed');
    }
  }

  /** The dedicated connection dropped: reconnect with backoff; if the others declared us dead meanwhile, start over. */
  private lost(client: pg.Client, e: Error) {
    if (this.stopped || client !== this.client || this.reconnecting) return;
    this.reconnecting = true;
    this.client = null;
    this.log.warn({ err: e.message }, 'cluster: lost the liveness connection; reconnecting');
    void (async () => {
      for (let delay = 200; !this.stopped; delay = Math.min(delay * 2, 5000)) {
        await new Promise((r) => setTimeout(r, delay));
        try {
          const alive = await this.db.selectFrom('processes').select('status').where('id', '=', this.id).executeTakeFirst();
          if (alive?.status === 'alive') {
            // Take the same lock back before anyone notices it was free; if it is gone already, we are fenced.
            const { default: PgDriver } = await import('pg');
            const c = new PgDriver.Client(this.pgInfo.connect);
            c.on('error', (err) => this.lost(c, err));
            c.on('end', () => this.lost(c, new Error('connection ended')));
            await c.connect();
            await c.query('select pg_advisory_lock($1, $2)', [this.ns, this.lockKey]);
            await this.subscribe(c);
            this.client = c;
            const still = await this.db.selectFrom('processes').select('status').where('id', '=', this.id).executeTakeFirst();
            if (still?.status !== 'alive') {
              await c.end().catch(() => undefined);
              this.client = null;
              throw new Error('declared dead meanwhile');
            }
          } else {
            this.hooks.onFenced();
            await this.register();
          }
          this.reconnecting = false;
          this.reconnected();
          return;
        } catch (err) {
          if (String((err as Error).message).includes('declared dead')) {
            this.hooks.onFenced();
            try {
              await this.register();
              this.reconnecting = false;
              this.reconnected();
              return;
            } catch {
              /* retry */
            }
          }
          this.log.warn({ err: (err as Error).message }, 'cluster: reconnect failed; retrying');
        }
      }
    })();
  }

  private beating = false;

  private async heartbeat() {
    if (this.stopped || this.beating) return;
    // No liveness connection and nothing bringing one back (a re-registration that failed): start over, or this
    // process would serve on under an identity the others have declared dead, and claim sessions no one frees.
    if (!this.client) return void (this.reconnecting || this.reRegister());
    // One at a time, and about the identity it started under: on a loaded machine a heartbeat outlasted the next
    // tick, both found the old identity dead, and the second dropped the work the new identity had just claimed
    // (a re-driven run aborted and driven a third time) and registered yet another identity.
    this.beating = true;
    const id = this.id;
    try {
      const r = await this.db
        .updateTable('processes')
        .set({ heartbeat_ms: dbNowMs as unknown as number })
        .where('id', '=', id)
        .where('status', '=', 'alive')
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0 && !this.stopped && this.id === id) {
        this.log.warn({ processId: this.id }, 'cluster: this process was declared dead; dropping its work and re-registering');
        const old = this.client;
        this.client = null;
        await old?.end().catch(() => undefined);
        this.hooks.onFenced();
        this.reRegister();
      }
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'cluster: heartbeat failed');
    } finally {
      this.beating = false;
    }
  }

  private sweeping = false;
  private sweeps = 0;

  /** Finds dead processes (lock gone: same host, at once; heartbeat stale: machine loss) and frees their sessions. */
  private async sweep() {
    if (this.stopped || this.sweeping) return;
    this.sweeping = true;
    try {
      const dead = await sql<{ id: string }>`
        select p.id from processes p
        where p.status = 'alive' and p.id <> ${this.id} and (
          p.heartbeat_ms < ${dbNowMs} - ${LIVENESS.deadAfterMs}
          or not exists (
            select 1 from pg_locks l
            where l.locktype = 'advisory' and l.granted and l.objsubid = 2
              and l.classid::bigint = ${this.ns} and l.objid::bigint = p.lock_key
              and l.database = (select oid from pg_database where datname = current_database())))`.execute(this.db);
      let freed = 0;
      for (const { id } of dead.rows) {
        const marked = await this.db.updateTable('processes').set({ status: 'dead' }).where('id', '=', id).where('status', '=', 'alive').executeTakeFirst();
        if (Number(marked.numUpdatedRows) !== 1) continue;
        // Bumping the epoch fences whatever the dead process might still try to write.
        const n = await freeSessionsOf(this.db, id);
        freed += n;
        this.log.warn({ processId: id, sessions: n }, 'cluster: process found dead; its sessions are taken over');
        this.hooks.onDeath?.(id);
      }
      // Sessions claimed under an identity already declared dead (a zombie that took a free session before it
      // learnt it was dead: a SIGSTOP or a lost liveness connection) are freed too: nobody else would ever free
      // them, since a process is swept once, at its death. Bumping the epoch fences the zombie's writes.
      const late = await freeSessionsOfGone(this.db, this.id);
      if (late) {
        freed += late;
        this.log.warn({ sessions: late }, 'cluster: sessions held by processes declared dead were freed');
      }
      // Every few sweeps (and at once after a death) look for sessions with work and no owner.
      if (freed || dead.rows.length || ++this.sweeps % 4 === 0) this.hooks.onOrphans();
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'cluster: sweep failed');
    } finally {
      this.sweeping = false;
    }
  }

  // ── leases ──────────────────────────────────────────────────────────────

  /**
   * Inserts a run (creating its session when missing) and claims the session's lease when no one holds it, in
   * one statement; a free session's run starts in it (see `enqueuePg`). The lease holder always runs the
   * session's queued runs: a holder releasing at the same moment sees this row (it locks the session row, then
   * looks), or is told.
   */
  async enqueue(row: RunRow, o: Omit<EnqueuePg, 'row' | 'me'>, claim?: { key: string; owner: string; settled?: boolean }): Promise<EnqueuePgResult> {
    // With an idempotency key: claimed in the same transaction (ClaimTaken when another request claimed it first).
    // One statement, or one transaction: a deadlock rolls it back whole, so it is made again (`retryConflicts`).
    const x = await retryConflicts(() => (claim ? enqueueClaimedPg(this.db, { row, me: this.id, ...o }, claim) : enqueuePg(this.db, { row, me: this.id, ...o })));
    if (!x) throw new ClaimTaken(claim!.key);
    let owner = x.owner;
    if (x.claimed == null && (owner == null || owner === this.id)) owner = await this.ownerOf(row.session_key);
    return { ...x, owner };
  }

  /**
   * Claims a session no one holds; the new epoch, or null when someone does, or when this identity is no longer alive.
   * A process declared dead claims nothing under its old identity while it registers a new one: such a claim (its own
   * orphan sweep, in the moment between learning it was dead and the new row) was freed again by the next sweep, and the
   * run it had re-driven was aborted and driven a third time (fencing.test's third model request).
   */
  async claim(sessionKey: string): Promise<number | null> {
    const id = this.id;
    const r = await this.db
      .updateTable('sessions')
      .set({ owner: id, epoch: NEXT_EPOCH })
      .where('key', '=', sessionKey)
      .where('owner', 'is', null)
      .where(identityAlive(id))
      .returning('epoch')
      .executeTakeFirst();
    return r ? Number(r.epoch) : null;
  }

  /** Lets go of a session (graceful stop), bumping its epoch so nothing of ours written late can land. */
  async release(sessionKey: string): Promise<void> {
    await this.db
      .updateTable('sessions')
      .set({ owner: null, epoch: NEXT_EPOCH })
      .where('key', '=', sessionKey)
      .where('owner', '=', this.id)
      .execute();
  }

  async ownerOf(sessionKey: string): Promise<string | null> {
    const r = await this.db.selectFrom('sessions').select('owner').where('key', '=', sessionKey).executeTakeFirst();
    return r?.owner ?? null;
  }

  /**
   * Sessions this process holds with unfinished runs (the sweep checks that each is being driven here), their
   * epochs, and whether those runs are only queued (none running or paused on an approval).
   */
  async ownUnfinished(limit = 50): Promise<Array<{ key: string; epoch: number; queuedOnly: boolean }>> {
    const r = await sql<{ key: string; epoch: number; queued_only: boolean }>`
      select s.key, s.epoch, not exists (
          select 1 from runs r where r.session_key = s.key and r.status in ('running', 'waiting_approval')) as queued_only
      from sessions s
      where s.owner = ${this.id} and exists (select 1 from runs r where r.session_key = s.key and r.status in ('queued', 'running', 'waiting_approval'))
      limit ${limit}`.execute(this.db);
    return r.rows.map((x) => ({ key: x.key, epoch: Number(x.epoch), queuedOnly: !!x.queued_only }));
  }

  /** Sessions with unfinished runs and no owner (left by a dead or stopped process). */
  async orphans(limit = 50): Promise<string[]> {
    const r = await sql<{ session_key: string }>`
      select distinct r.session_key from runs r join sessions s on s.key = r.session_key
      where r.status in ('queued', 'running', 'waiting_approval') and s.owner is null
      limit ${limit}`.execute(this.db);
    return r.rows.map((x) => x.session_key);
  }

  // ── messages ────────────────────────────────────────────────────────────

  async notify(msg: ControlMessage): Promise<void> {
    await sql`select pg_notify(${this.channel}, ${JSON.stringify(msg)})`.execute(this.db);
  }

  /** A notification on a channel of `listen` (every process listening there gets it, this one too). */
  async publish(channel: string, payload: string): Promise<void> {
    await sql`select pg_notify(${channel}, ${payload})`.execute(this.db);
  }

  async processes(): Promise<Array<Pick<ProcessesTable, 'id' | 'host' | 'pid' | 'url' | 'started_at'>>> {
    return this.db.selectFrom('processes').select(['id', 'host', 'pid', 'url', 'started_at']).where('status', '=', 'alive').orderBy('started_at').execute();
  }

  /** Tests: die as a SIGKILL would (the lock goes with the connection; nothing is written). */
  crash(): void {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    const c = this.client as (pg.Client & { connection?: { stream?: { destroy(): void } } }) | null;
    this.client = null;
    c?.connection?.stream?.destroy();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    while (this.sweeping) await new Promise((r) => setTimeout(r, 10));
    try {
      await this.db.updateTable('processes').set({ status: 'stopped' }).where('id', '=', this.id).execute();
      // A session claimed here after the orchestrator let its sessions go (a request in flight at the stop) is let
      // go too: nobody sweeps the sessions of a process that stopped rather than died.
      if (await freeSessionsOf(this.db, this.id)) await this.notify({ kind: 'orphans' });
    } catch {
      /* the database may be gone */
    }
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => undefined);
  }
}
