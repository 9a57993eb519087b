// A session's queue and its runs, in this process: one actor per session (runs serialised), the five queue modes
// with no loss and a run's execution. A run's end is RunEnds' (run-ends.ts); the cluster side (leases, control
// messages, takeover) is ClusterRuns' (cluster-runs.ts); waits, cancels and the stop are Orchestrator's.
import type { AgentConfig, CrosstalkConfig, QueueMode } from '../config';
import { CrosstalkError } from '../errors';
import type { EventBus } from '../events/bus';
import type { AgentResult, WaitResult } from '../gateway/types';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics';
import { lazyRemoteA2AModel, lazyRemoteContextId, remoteOpenTask } from '../a2a/remote-lazy';
import { createModelChain, FallbackTracker } from '../models/fallback';
import { agentIdOf, sessionKindOf } from '../sessions/keys';
import type { ApprovalRow, CallbackRow, RunRow, SessionRow } from '../store/schema';
import { FencedError, nowIso, type Store } from '../store/store';
import { isCutOff, isDuplicateKey } from '../store/pg-errors';
import type { AnyToolDef } from '../tools/types';
import { Approvals, type DecidedBy } from './approvals';
import { reviewerOver } from './reviewer';
import { executeRun, inputToMessage, type RunDeps } from './run-loop';
import type { ActiveRun, InboxItem, RunInput, RunOutcome } from './types';
import type { Cluster } from '../cluster/cluster';
import { sameTrust, trustOf } from '../trust/trust';
import { Budgets } from './budget';
import { type RunHookDeps, startRunTrace } from './run-hooks';
import { collectable, mergeInputs, newRunId, parseOrigin, type QueueItem, SHUTDOWN, type SessionState, type SubmitOptions } from './queue';

/** How many ended runs' answers `RunQueues.ended` keeps. */
const ENDED_KEPT = 1000;

export abstract class RunQueues {
  readonly approvals: Approvals;
  protected readonly sessions = new Map<string, SessionState>();
  protected readonly waiters = new Map<string, Set<(r: WaitResult) => void>>();
  /**
   * The answers of the runs whose end this process recorded last (at most ENDED_KEPT), by run id: an `agent.wait`
   * arriving after the end needs no read of the run (an ended run's row changes no more).
   */
  protected readonly ended = new Map<string, WaitResult>();
  protected rememberEnd(runId: string, r: WaitResult): void {
    if (this.ended.size >= ENDED_KEPT) this.ended.delete(this.ended.keys().next().value!);
    this.ended.set(runId, r);
  }
  /** Runs this process is executing, by id: their session key. */
  protected readonly running = new Map<string, string>();
  protected readonly trackers = new Map<string, FallbackTracker>();
  protected readonly agents: Map<string, AgentConfig>;
  protected readonly deps: RunDeps;
  protected readonly live = new Set<Promise<unknown>>();
  /** Each run's execution in this process, by run id: one at a time (a re-drive here waits for an earlier copy). */
  protected readonly executions = new Map<string, Promise<void>>();
  /**
   * Runs still executing here under a lease this process lost (it was declared dead: `fenced()`), by session: until
   * each has stopped, its session's stale fence stays, and a new lease on it here waits (`zombiesOf`).
   */
  protected readonly zombies = new Map<string, Promise<void>>();

  /** A session's run still stopping here under a lost lease, if any (see `zombies`). */
  protected zombiesOf(key: string): Promise<void> | undefined {
    return this.zombies.get(key);
  }

  /** Whether a session state is the one this process drives the session with (not one dropped by a fence or a stop). */
  protected current(st: SessionState): boolean {
    return this.sessions.get(st.key) === st;
  }

  constructor(
    protected readonly o: { store: Store; bus: EventBus; metrics: Metrics; log: Logger; config: CrosstalkConfig; tools: Map<string, AnyToolDef> } & RunHookDeps,
  ) {
    this.agents = new Map(o.config.agents.map((a) => [a.id, a]));
    this.approvals = new Approvals(o.store, o.bus, o.metrics, (row, by) => this.decisionElsewhere(row, by), reviewerOver(o));
    this.approvals.onWait = (runId) => {
      if (this.stopping) this.handOver(runId);
    };
    this.deps = {
      ...o,
      approvals: this.approvals,
      budgets: new Budgets({ store: o.store, bus: o.bus, agent: (id) => this.agents.get(id) }),
      modelFor: (run, sessionModel) => this.modelFor(run, sessionModel),
      onInjected: async (runId, into) => {
        into.injected = true;
        await o.store.updateRunFenced(runId, into.sessionKey, { status: 'merged', ended_at: nowIso(), merged_into: into.id });
      },
    };
  }

  agent(id: string): AgentConfig | undefined {
    return this.agents.get(id);
  }

  /** The agent a session key belongs to; `unknown_agent` when the key names none. */
  /** The store that keeps delivery records (CONTRACT §9), for the tools that start hand-offs. */
  deliveryStore(): Store {
    return this.o.store;
  }

  agentForKey(key: string): AgentConfig {
    const id = agentIdOf(key);
    const agent = id ? this.agents.get(id) : undefined;
    if (!agent) throw new CrosstalkError('unknown_agent', `unknown agent in session key ${key}`);
    return agent;
  }

  isActive(key: string): boolean {
    return !!this.sessions.get(key)?.active;
  }

  /** PostgreSQL: this process's membership of the cluster (set by boot before `recover`). */
  cluster: Cluster | null = null;
  protected stopping = false;

  activeRunCount(): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.active) n++;
    return n;
  }

  protected modelFor(run: ActiveRun, sessionModel: string | null) {
    if (run.agent.a2a) {
      // A remote A2A agent (server/a2a): calls under the webhook SSRF rules, with an opaque contextId per session.
      const { allowPrivateNetwork } = this.o.config.webhooks;
      const hops = (run.origin as { a2aHops?: unknown } | undefined)?.a2aHops;
      return lazyRemoteA2AModel(run.agent.a2a, {
        allowPrivateNetwork,
        contextId: () => lazyRemoteContextId(this.o.store, run.sessionKey),
        hops: () => (typeof hops === 'number' ? hops : 0),
        openTask: remoteOpenTask(this.o.store, run.sessionKey),
      });
    }
    const specs = sessionModel ? [sessionModel] : run.agent.models;
    const trackerKey = `${run.agent.id}|${specs.join(',')}`;
    let tracker = this.trackers.get(trackerKey);
    if (!tracker) this.trackers.set(trackerKey, (tracker = new FallbackTracker()));
    run.modelSpec = tracker.activeFallback ?? specs[0];
    return createModelChain(specs, {
      tracker,
      onFallback: (info) => ((run.modelSpec = info.to), this.o.bus.emit(run.id, 'lifecycle', { phase: 'fallback', ...info })),
      onFallbackCleared: (info) => ((run.modelSpec = info.model), this.o.bus.emit(run.id, 'lifecycle', { phase: 'fallback_cleared', ...info })),
    });
  }

  protected state(key: string): SessionState {
    let st = this.sessions.get(key);
    if (!st) this.sessions.set(key, (st = { key, active: null, parked: false, queue: [], known: new Set() }));
    return st;
  }

  protected newActive(id: string, key: string, agent: AgentConfig): ActiveRun {
    return { id, sessionKey: key, agent, abort: new AbortController(), inbox: [], closing: false, delivered: new Set(), counters: new Map() };
  }

  protected runRow(runId: string, key: string, inputs: RunInput[], mode: QueueMode, opts: SubmitOptions, origin?: Record<string, unknown>): RunRow {
    return {
      id: runId,
      session_key: key,
      status: 'queued',
      input: JSON.stringify(inputs),
      queue_mode: mode,
      response: null,
      error: null,
      created_at: nowIso(),
      started_at: null,
      ended_at: null,
      origin: origin || opts.origin ? JSON.stringify({ ...opts.origin, ...origin }) : null,
      webhook: opts.webhook ? JSON.stringify(opts.webhook) : null,
      last_seq: 0,
      merged_into: null,
      cancel_requested: null,
    };
  }

  /** Accepts a message for a session: starts a run, or follows the session's queue mode while one is active. */
  async submit(sessionKey: string, input: RunInput, opts: SubmitOptions = {}): Promise<AgentResult> {
    const agent = this.agentForKey(sessionKey);
    if (opts.runId) {
      const existing = await this.o.store.getRun(opts.runId);
      if (existing) return { runId: existing.merged_into ?? existing.id, status: 'queued' };
    }
    const runId = opts.runId ?? newRunId();
    // PostgreSQL: the session's creation, its queue mode and the lease claim are part of the enqueue statement.
    if (this.cluster) {
      try {
        return await this.submitShared(sessionKey, agent, input, runId, opts);
      } catch (e) {
        // Two processes submitting one derived run id at once (a re-driven call, a callback both sweeps deliver): the
        // second insert is refused by the run's key after both looked; that run is the first's, accepted once.
        if (opts.runId && isDuplicateKey(e, 'runs_pkey')) {
          const existing = await this.o.store.getRun(opts.runId);
          if (existing) return { runId: existing.merged_into ?? existing.id, status: 'queued' };
        }
        throw e;
      }
    }
    // One process: the answer is known before the write, so the idempotency key is claimed with it, settled.
    const claim = (result: AgentResult, row = runId) => opts.claim && { ...opts.claim, runId: row, result, settled: true };
    const msgs = [inputToMessage(sessionKey, runId, input)];
    if (!this.sessions.get(sessionKey)?.active && this.o.store.canStartNew(sessionKey, msgs)) {
      // Nothing active here (so nothing queued): the run starts now. Its session (created when missing), its row
      // and its start are ONE transaction (SQLite), taken before any await so no other message slips in between.
      const st = this.state(sessionKey);
      const row = this.runRow(runId, sessionKey, [input], this.o.config.session.queueMode, opts);
      const mode = (s: SessionRow) => opts.queueMode ?? s.queue_mode ?? this.o.config.session.queueMode;
      const item: QueueItem = { runId, inputs: [input], persisted: Promise.resolve(), collect: false, row };
      item.persisted = this.o.store
        .startNew(row, msgs, { key: sessionKey, agentId: agent.id, kind: sessionKindOf(sessionKey) }, mode, claim({ runId, status: 'started' }))
        .then((started) => void (item.startedWith = started));
      const active = this.start(st, item, false);
      await item.persisted;
      await new Promise<void>((resolve) => (active.started ? resolve() : (active.onStarted = resolve)));
      return { runId, status: 'started' };
    }
    const session = await this.o.store.ensureSession({ key: sessionKey, agentId: agent.id, kind: sessionKindOf(sessionKey) });
    const mode = (opts.queueMode ?? (session.queue_mode as QueueMode | null) ?? this.o.config.session.queueMode) as QueueMode;
    const st = this.state(sessionKey);

    // Everything below up to the first await is synchronous, so the session's state cannot change under us.
    if (!st.active) {
      // The row as inserted is the row the run starts from (no second read).
      const row = this.runRow(runId, sessionKey, [input], mode, opts);
      const item: QueueItem = { runId, inputs: [input], persisted: this.o.store.insertRun(row, claim({ runId, status: 'started' })), collect: false, row };
      const active = this.start(st, item, false);
      await item.persisted;
      // Answer once the message is in the transcript, so a history read right after `agent` sees it.
      await new Promise<void>((resolve) => (active.started ? resolve() : (active.onStarted = resolve)));
      return { runId, status: 'started' };
    }
    let effective = mode;
    if (opts.neverRefuse && (mode === 'reject' || mode === 'interrupt')) effective = 'followup';
    if (effective === 'collect' && !collectable(input)) effective = 'followup';
    switch (effective) {
      case 'reject':
        throw new CrosstalkError('agent_busy', `session ${sessionKey} is busy with run ${st.active.id}`);
      case 'steer': {
        // A message is steered only into a run of the same trust; otherwise it runs after, under its own.
        if (this.takesSteer(st.active, opts.origin)) {
          const active = st.active;
          const item: InboxItem = {
            runId,
            input,
            persisted: this.o.store.insertRun(this.runRow(runId, sessionKey, [input], mode, opts, { steerInto: active.id }), claim({ runId: active.id, status: 'steered' })),
          };
          active.inbox.push(item);
          await item.persisted;
          return { runId: active.id, status: 'steered' };
        }
        break; // the run is ending: a follow-up
      }
      case 'collect': {
        const open = st.queue.findLast((q) => q.collect);
        const trustKey = JSON.stringify(trustOf(opts.origin));
        if (open && open === st.queue[st.queue.length - 1] && open.trustKey === trustKey) {
          open.inputs.push(input);
          const inputs = JSON.stringify(open.inputs);
          open.persisted = open.persisted.then(() => this.o.store.mergeInput(open.runId, inputs, claim({ runId: open.runId, status: 'queued' }, open.runId)));
          await open.persisted;
          return { runId: open.runId, status: 'queued' };
        }
        const item: QueueItem = { runId, inputs: [input], persisted: this.o.store.insertRun(this.runRow(runId, sessionKey, [input], mode, opts), claim({ runId, status: 'queued' })), collect: true, trustKey };
        st.queue.push(item);
        await item.persisted;
        return { runId, status: 'queued' };
      }
      case 'interrupt': {
        const item: QueueItem = { runId, inputs: [input], persisted: this.o.store.insertRun(this.runRow(runId, sessionKey, [input], mode, opts), claim({ runId, status: 'started' })), collect: false, interrupt: true };
        this.interruptWith(st, item);
        await item.persisted;
        return { runId, status: 'started' };
      }
      default:
        break;
    }
    const item: QueueItem = { runId, inputs: [input], persisted: this.o.store.insertRun(this.runRow(runId, sessionKey, [input], mode, opts), claim({ runId, status: 'queued' })), collect: false };
    st.queue.push(item);
    await item.persisted;
    return { runId, status: 'queued' };
  }

  // ── several processes (PostgreSQL) ────────────────────────────────────
  // The session row is the lock: whoever holds its lease drives its runs. A message lands as a run row; the same
  // statement claims the lease when it is free and, when the session has nothing else to do, starts the run, so the
  // common path runs right here with no queue hop. Otherwise the row is queued: when another process holds the
  // lease, that process is told (NOTIFY) and takes the row in by its queue mode.

  /** `agent` answers "started" once the message is in the transcript. */
  protected async startedAnswer(st: SessionState, res: AgentResult): Promise<AgentResult> {
    if (res.status === 'started' && st.active?.id === res.runId) {
      const active = st.active;
      await new Promise<void>((resolve) => (active.started ? resolve() : (active.onStarted = resolve)));
    }
    return res;
  }

  /** Ends a run that never started: its row, its lifecycle event and its waiters (false: it had started meanwhile). */
  protected async endUnstarted(runId: string, sessionKey: string, error: string): Promise<boolean> {
    if (!(await this.o.store.endQueued(runId, error))) return false;
    this.o.bus.registerRun(runId, sessionKey, await this.o.store.maxSeq(runId));
    this.o.bus.emit(runId, 'lifecycle', { phase: 'error', status: 'error', error });
    this.o.bus.unregisterRun(runId);
    const ws = this.waiters.get(runId);
    if (ws) for (const w of ws) w({ status: 'error', error });
    return true;
  }

  /**
   * An `interrupt` message: the active run is aborted and this one runs next. Interrupts that came before it and have
   * not started yet are interrupted by it in turn (ended `interrupted`, as the run they interrupted): the newest
   * message is the one that runs. (Each went to the front: they ran newest first, then the older ones after it.)
   */
  protected interruptWith(st: SessionState, item: QueueItem): void {
    while (st.queue[0]?.interrupt) {
      const older = st.queue.shift()!;
      void older.persisted.then(() => this.endUnstarted(older.runId, st.key, 'interrupted')).catch((e) => this.o.log.warn({ err: (e as Error).message, runId: older.runId }, 'could not end a superseded interrupt'));
    }
    st.queue.unshift(item);
    this.abortActive(st);
  }

  /** Aborts the active run of a session (interrupt mode, session delete). */
  abortActive(st: SessionState | string): void {
    const s = typeof st === 'string' ? this.sessions.get(st) : st;
    if (!s?.active) return;
    s.active.abort.abort();
    if (s.parked) {
      // Nothing is executing in this process for a parked run: close it here.
      const active = s.active;
      s.parked = false;
      void this.finish(s, active, { status: 'error', error: 'interrupted' });
    }
  }

  protected start(st: SessionState, item: QueueItem, resume: boolean): ActiveRun {
    const active = this.newActive(item.runId, st.key, this.agentForKey(st.key));
    st.active = active;
    this.running.set(active.id, st.key);
    this.track(st, active, item, resume);
    return active;
  }

  /** Executes a run, after any earlier execution of the same run in this process has ended (never two at once). */
  private track(st: SessionState, active: ActiveRun, item: QueueItem, resume: boolean): void {
    const before = this.executions.get(active.id);
    const p: Promise<void> = before ? before.then(() => this.execute(st, active, item, resume)) : this.execute(st, active, item, resume);
    this.executions.set(active.id, p);
    this.live.add(p);
    void p.finally(() => {
      this.live.delete(p);
      if (this.executions.get(active.id) === p) this.executions.delete(active.id);
      if (this.zombies.get(st.key) === p) this.zombies.delete(st.key);
    });
  }

  protected async execute(st: SessionState, active: ActiveRun, item: QueueItem, resume: boolean): Promise<void> {
    let outcome: RunOutcome;
    this.o.metrics.activeRuns.inc();
    try {
      await item.persisted;
      const row = item.row ?? (await this.o.store.getRun(item.runId));
      if (!row) throw new Error(`run ${item.runId} vanished`);
      active.row = row;
      startRunTrace(this.deps, active, row);
      this.o.bus.registerRun(active.id, st.key, resume ? await this.o.store.maxSeq(active.id) : 0, { leased: !!this.cluster });
      // `collect` turns its queued messages into one user turn.
      const inputs = item.collect && item.inputs.length > 1 ? [mergeInputs(item.inputs)] : item.inputs;
      const run = () => executeRun(this.deps, active, { ...row, input: JSON.stringify(inputs) }, resume, item.startedWith);
      outcome = process.env.CROSSTALK_BENCH_GLOBAL_LOCK ? await this.underGlobalLock(run) : await run();
    } catch (e) {
      if (e instanceof FencedError || active.abort.signal.reason === SHUTDOWN) outcome = { status: 'abandoned', error: 'fenced' };
      else if (this.cluster && isCutOff(e)) {
        // PostgreSQL went away mid-run: nothing says the run is over. It is dropped here (the lease stays) and the
        // orphan sweep's backstop takes the session in again and re-drives it once the database answers.
        this.o.log.warn({ runId: active.id, err: (e as Error).message }, 'run lost its database connection; it will be re-driven');
        outcome = { status: 'abandoned', error: 'connection lost' };
      } else {
        this.o.log.error({ err: e, runId: active.id }, 'run crashed');
        outcome = { status: 'error', error: e instanceof Error ? e.message : String(e) };
      }
    } finally {
      this.o.metrics.activeRuns.dec();
    }
    await this.finish(st, active, outcome);
  }

  /**
   * The bench's negative control only (CROSSTALK_BENCH_GLOBAL_LOCK=1): every run holds one cluster-wide lock, a
   * deliberate global bottleneck that the scale-out figures must show as a flat curve.
   */
  protected async underGlobalLock<T>(fn: () => Promise<T>): Promise<T> {
    const { sql } = await import('kysely');
    return this.o.store.db.connection().execute(async (conn) => {
      await sql`select pg_advisory_lock(4242)`.execute(conn);
      try {
        return await fn();
      } finally {
        await sql`select pg_advisory_unlock(4242)`.execute(conn);
      }
    });
  }

  /**
   * A stopping process does not hold a run that waits for a person through its grace: the run is stopped between
   * steps (its approval stays pending) and handed over, so the process that takes the session waits for it instead.
   */
  protected handOver(runId: string): void {
    for (const st of this.sessions.values()) if (st.active?.id === runId && !st.parked) st.active.abort.abort(SHUTDOWN);
  }

  protected startNext(st: SessionState): void {
    // A stopping process starts nothing new: what is queued stays queued in the store for whoever takes the session.
    // Nor does a state this process no longer drives the session with (dropped when it was declared dead, or by a
    // stop): its queued runs are in the store, and whoever holds the lease now (maybe a new state here) runs them.
    if (st.active || st.loading || this.stopping || !this.current(st)) return;
    const next = st.queue.shift();
    if (next) {
      this.start(st, next, false);
      return;
    }
    if (this.cluster) {
      void this.releaseIdle(st).catch((e) => this.o.log.warn({ err: (e as Error).message, sessionKey: st.key }, 'could not release an idle session'));
      return;
    }
    this.sessions.delete(st.key);
  }

  /**
   * Whether a message from `origin` may be steered into `active`: only while the run still looks at its inbox, and only
   * into a run of the same trust (CONTRACT §4; else it runs after, under its own).
   */
  protected takesSteer(active: ActiveRun, origin: unknown): boolean {
    return !active.closing && sameTrust(trustOf(origin), trustOf(active.row ? parseOrigin(active.row.origin) : active.origin));
  }

  /** Resumes a run that was paused on an approval in an earlier process. */
  resumeRun(runId: string): void {
    for (const st of this.sessions.values()) {
      if (st.active?.id === runId) {
        if (!st.parked) return; // live in this process: its gate has the decision
        st.parked = false;
        this.runStarted(st, st.active, { runId, inputs: [], persisted: Promise.resolve(), collect: false }, true);
        return;
      }
    }
  }

  /** Executes a session's active run (a resume or a re-drive: its input is already in the transcript). */
  protected runStarted(st: SessionState, active: ActiveRun, item: QueueItem, resume: boolean): void {
    this.track(st, active, item, resume);
  }

  // ── what a run's end (RunEnds) provides ───────────────────────────────
  protected abstract finish(st: SessionState, active: ActiveRun, outcome: RunOutcome): Promise<void>;
  protected abstract abandon(st: SessionState, active: ActiveRun, why: 'skipped' | 'stopped'): void;
  abstract deliverCallback(cb: CallbackRow): Promise<void>;

  // ── what the cluster side (ClusterRuns) provides ───────────────────────
  protected abstract submitShared(sessionKey: string, agent: AgentConfig, input: RunInput, runId: string, opts: SubmitOptions): Promise<AgentResult>;
  protected abstract placeStored(st: SessionState, row: RunRow): AgentResult;
  protected abstract releaseIdle(st: SessionState): Promise<void>;
  protected abstract decisionElsewhere(row: ApprovalRow, by?: DecidedBy): Promise<void>;
  abstract claimOrphan(key: string): Promise<void>;
}
