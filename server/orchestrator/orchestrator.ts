// The orchestrator: one actor per session (runs serialised), the five queue modes with no loss, waits, recovery.
import crypto from 'node:crypto';
import type { AgentConfig, CrosstalkConfig, QueueMode } from '../config';
import { CrosstalkError } from '../errors';
import type { EventBus } from '../events/bus';
import type { AgentResult, WaitResult } from '../gateway/types';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics';
import { createRemoteA2AModel } from '../a2a/remote-model';
import { createModelChain, FallbackTracker } from '../models/fallback';
import { agentIdOf, sessionKindOf } from '../sessions/keys';
import type { RunRow } from '../store/schema';
import { nowIso, type Store } from '../store/store';
import type { AnyToolDef } from '../tools/types';
import { Approvals } from './approvals';
import { planDeliveries } from './callbacks';
import { executeRun, type RunDeps } from './run-loop';
import { markStarted } from './started';
import { failpoint } from '../failpoints';
import type { WebhookDispatcher } from '../webhooks/deliver';
import type { CallbackRow } from '../store/schema';
import type { ActiveRun, InboxItem, RunInput, RunOutcome } from './types';
import type { Cluster, ControlMessage } from '../cluster/cluster';
import { FencedError } from '../store/store';
import type { ApprovalRow } from '../store/schema';

/** The abort reason of a graceful stop: the run is left as it is, for a re-drive (here after a restart, or elsewhere). */
export const SHUTDOWN = Symbol.for('crosstalk.shutdown');
import { carryTrust, sameTrust, trustOf } from '../trust/trust';
import { endRunTrace, type RunHookDeps, startRunTrace } from './run-hooks';
import { stampTrace } from '../telemetry/propagation';

export interface SubmitOptions {
  queueMode?: QueueMode;
  webhook?: { url: string; secret?: string };
  origin?: Record<string, unknown>;
  /** Callbacks are never refused or dropped: `reject` and `interrupt` queue them as follow-ups. */
  neverRefuse?: boolean;
  /** A caller-chosen run id: a second submit with the same id is a no-op (exactly-once delivery). */
  runId?: string;
}

interface QueueItem {
  runId: string;
  inputs: RunInput[];
  persisted: Promise<void>;
  collect: boolean;
  /** The trust of a `collect` turn's messages: only messages of the same trust are collected into one turn. */
  trustKey?: string;
  /** Its stored row when already read (as queued): the run need not read it again. */
  row?: RunRow;
}

interface SessionState {
  key: string;
  active: ActiveRun | null;
  /** The active run was paused on an approval before a restart; it resumes when a decision arrives. */
  parked: boolean;
  queue: QueueItem[];
  /** PostgreSQL: the run ids of this session this process has taken in (queued, steered, running). */
  known: Set<string>;
  /** PostgreSQL: set while the session's unfinished runs are being loaded after a claim. */
  loading?: Promise<void>;
  /** PostgreSQL: the lease epoch this process holds the session under. */
  epoch?: number;
}

const TERMINAL = new Set(['ok', 'error', 'interrupted']);

export const newRunId = () => `run_${crypto.randomUUID()}`;

/**
 * The id of what a tool call starts (a target run, a delegate session), derived from the calling run and call:
 * a re-driven call after a crash finds the same run instead of starting a second one.
 */
export const derivedId = (runId: string, callId: string, slot = '') =>
  crypto.createHash('sha256').update(`${runId}\u0000${callId}\u0000${slot}`).digest('hex').slice(0, 24);

export function waitResultOf(row: Pick<RunRow, 'status' | 'response' | 'error'>): WaitResult {
  if (row.status === 'ok') return { status: 'ok', response: (row.response ?? '').trim() };
  return { status: 'error', error: row.error ?? row.status, ...(row.response ? { response: row.response.trim() } : {}) };
}

export class Orchestrator {
  readonly approvals: Approvals;
  private readonly sessions = new Map<string, SessionState>();
  private readonly waiters = new Map<string, Set<(r: WaitResult) => void>>();
  /** Runs this process is executing, by id: their session key. */
  private readonly running = new Map<string, string>();
  private readonly trackers = new Map<string, FallbackTracker>();
  private readonly agents: Map<string, AgentConfig>;
  private readonly deps: RunDeps;
  private readonly live = new Set<Promise<unknown>>();

  constructor(
    private readonly o: { store: Store; bus: EventBus; metrics: Metrics; log: Logger; config: CrosstalkConfig; tools: Map<string, AnyToolDef> } & RunHookDeps,
  ) {
    this.agents = new Map(o.config.agents.map((a) => [a.id, a]));
    this.approvals = new Approvals(o.store, o.bus, o.metrics, (row) => this.decisionElsewhere(row));
    this.deps = {
      ...o,
      approvals: this.approvals,
      modelFor: (run, sessionModel) => this.modelFor(run, sessionModel),
      onInjected: async (runId, into) => {
        into.injected = true;
        await o.store.updateRun(runId, { status: 'merged', ended_at: nowIso(), merged_into: into.id });
      },
    };
  }

  agent(id: string): AgentConfig | undefined {
    return this.agents.get(id);
  }

  /** The agent a session key belongs to; `unknown_agent` when the key names none. */
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
  private stopping = false;

  activeRunCount(): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.active) n++;
    return n;
  }

  private modelFor(run: ActiveRun, sessionModel: string | null) {
    if (run.agent.a2a) return createRemoteA2AModel(run.agent.a2a, run.sessionKey); // a remote A2A agent (server/a2a)
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

  private state(key: string): SessionState {
    let st = this.sessions.get(key);
    if (!st) this.sessions.set(key, (st = { key, active: null, parked: false, queue: [], known: new Set() }));
    return st;
  }

  private newActive(id: string, key: string, agent: AgentConfig): ActiveRun {
    return { id, sessionKey: key, agent, abort: new AbortController(), inbox: [], closing: false, delivered: new Set(), counters: new Map() };
  }

  private runRow(runId: string, key: string, inputs: RunInput[], mode: QueueMode, opts: SubmitOptions, origin?: Record<string, unknown>): RunRow {
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
    const session = await this.o.store.ensureSession({ key: sessionKey, agentId: agent.id, kind: sessionKindOf(sessionKey) });
    const mode = (opts.queueMode ?? (session.queue_mode as QueueMode | null) ?? this.o.config.session.queueMode) as QueueMode;
    if (opts.runId) {
      const existing = await this.o.store.getRun(opts.runId);
      if (existing) return { runId: existing.merged_into ?? existing.id, status: 'queued' };
    }
    const runId = opts.runId ?? newRunId();
    if (this.cluster) return this.submitShared(sessionKey, input, mode, runId, opts);
    const st = this.state(sessionKey);

    // Everything below up to the first await is synchronous, so the session's state cannot change under us.
    if (!st.active) {
      const item: QueueItem = { runId, inputs: [input], persisted: this.o.store.insertRun(this.runRow(runId, sessionKey, [input], mode, opts)), collect: false };
      const active = this.start(st, item, false);
      await item.persisted;
      // Answer once the message is in the transcript, so a history read right after `agent` sees it.
      await new Promise<void>((resolve) => (active.started ? resolve() : (active.onStarted = resolve)));
      return { runId, status: 'started' };
    }
    let effective = mode;
    if (opts.neverRefuse && (mode === 'reject' || mode === 'interrupt')) effective = 'followup';
    switch (effective) {
      case 'reject':
        throw new CrosstalkError('agent_busy', `session ${sessionKey} is busy with run ${st.active.id}`);
      case 'steer': {
        // A message is steered only into a run of the same trust; otherwise it runs after, under its own.
        if (!st.active.closing && sameTrust(trustOf(opts.origin), trustOf(st.active.row ? parseOrigin(st.active.row.origin) : st.active.origin))) {
          const active = st.active;
          const item: InboxItem = {
            runId,
            input,
            persisted: this.o.store.insertRun(this.runRow(runId, sessionKey, [input], mode, opts, { steerInto: active.id })),
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
          open.persisted = open.persisted.then(() => this.o.store.updateRun(open.runId, { input: inputs }));
          await open.persisted;
          return { runId: open.runId, status: 'queued' };
        }
        const item: QueueItem = { runId, inputs: [input], persisted: this.o.store.insertRun(this.runRow(runId, sessionKey, [input], mode, opts)), collect: true, trustKey };
        st.queue.push(item);
        await item.persisted;
        return { runId, status: 'queued' };
      }
      case 'interrupt': {
        const item: QueueItem = { runId, inputs: [input], persisted: this.o.store.insertRun(this.runRow(runId, sessionKey, [input], mode, opts)), collect: false };
        st.queue.unshift(item);
        this.abortActive(st);
        await item.persisted;
        return { runId, status: 'started' };
      }
      default:
        break;
    }
    const item: QueueItem = { runId, inputs: [input], persisted: this.o.store.insertRun(this.runRow(runId, sessionKey, [input], mode, opts)), collect: false };
    st.queue.push(item);
    await item.persisted;
    return { runId, status: 'queued' };
  }

  // ── several processes (PostgreSQL) ────────────────────────────────────
  // The session row is the lock: whoever holds its lease drives its runs. A message lands as a queued run row;
  // the same statement claims the lease when it is free, so the common path runs right here with no queue hop.
  // When another process holds it, that process is told (NOTIFY) and takes the row in by its queue mode.

  private async submitShared(sessionKey: string, input: RunInput, mode: QueueMode, runId: string, opts: SubmitOptions): Promise<AgentResult> {
    const cluster = this.cluster!;
    const effective: QueueMode = opts.neverRefuse && (mode === 'reject' || mode === 'interrupt') ? 'followup' : mode;
    const row = this.runRow(runId, sessionKey, [input], effective, opts);
    const r = await cluster.enqueue(row, effective === 'reject');
    if (!r.inserted) throw new CrosstalkError('agent_busy', `session ${sessionKey} is busy${r.active ? ` with run ${r.active}` : ''}`);
    let owner = r.owner;
    if (r.claimed !== null) {
      await this.adopt(sessionKey, r.claimed, r.unfinished ? [...r.unfinished, row] : undefined);
      owner = cluster.id;
    } else if (owner === null) {
      const epoch = await cluster.claim(sessionKey);
      if (epoch !== null) {
        await this.adopt(sessionKey, epoch);
        owner = cluster.id;
      } else owner = await cluster.ownerOf(sessionKey);
    }
    if (owner === cluster.id) {
      const st = this.sessions.get(sessionKey);
      if (st?.loading) await st.loading;
      if (st && !st.known.has(runId)) return this.startedAnswer(st, this.placeStored(st, row));
      if (st) return this.startedAnswer(st, st.active?.id === runId ? { runId, status: 'started' } : { runId, status: 'queued' });
      // The lease went away between the claim and here (released as idle): the row is queued; whoever claims runs it.
      return { runId, status: 'queued' };
    }
    if (owner) await cluster.notify({ kind: 'work', to: owner, sessionKey });
    // The owner steers it into the active run only when their trust matches (else it runs after, as here locally).
    if (effective === 'steer' && r.active && sameTrust(trustOf(parseOrigin(row.origin)), trustOf(parseOrigin(r.activeOrigin)))) return { runId: r.active, status: 'steered' };
    return { runId, status: effective === 'interrupt' ? 'started' : 'queued' };
  }

  /** `agent` answers "started" once the message is in the transcript. */
  private async startedAnswer(st: SessionState, res: AgentResult): Promise<AgentResult> {
    if (res.status === 'started' && st.active?.id === res.runId) {
      const active = st.active;
      await new Promise<void>((resolve) => (active.started ? resolve() : (active.onStarted = resolve)));
    }
    return res;
  }

  /** Takes a stored queued run into a session this process drives, by its queue mode (as `submit` does locally). */
  private placeStored(st: SessionState, row: RunRow): AgentResult {
    st.known.add(row.id);
    const inputs = JSON.parse(row.input) as RunInput[];
    const input = inputs.length > 1 ? mergeInputs(inputs) : inputs[0]!;
    const trust = trustOf(parseOrigin(row.origin));
    const item: QueueItem = { runId: row.id, inputs: [input], persisted: Promise.resolve(), collect: row.queue_mode === 'collect', trustKey: JSON.stringify(trust), row };
    if (!st.active) {
      st.queue.push(item);
      this.startNext(st);
      return { runId: row.id, status: (st.active as ActiveRun | null)?.id === row.id ? 'started' : 'queued' };
    }
    switch (row.queue_mode) {
      case 'steer':
        // Trust follows the run: a message is steered only into a run of the same trust (else it runs after).
        if (!st.active.closing && sameTrust(trust, trustOf(st.active.row ? parseOrigin(st.active.row.origin) : st.active.origin))) {
          const origin = JSON.stringify({ ...(row.origin ? JSON.parse(row.origin) : {}), steerInto: st.active.id });
          st.active.inbox.push({ runId: row.id, input, persisted: this.o.store.updateRun(row.id, { origin }) });
          return { runId: st.active.id, status: 'steered' };
        }
        break;
      case 'collect': {
        const open = st.queue[st.queue.length - 1];
        if (open?.collect && open.trustKey === item.trustKey) {
          open.inputs.push(input);
          const merged = JSON.stringify(open.inputs);
          open.persisted = open.persisted
            .then(() => this.o.store.updateRun(open.runId, { input: merged }))
            .then(() => this.o.store.updateRun(row.id, { status: 'merged', merged_into: open.runId }));
          return { runId: open.runId, status: 'queued' };
        }
        st.queue.push(item);
        return { runId: row.id, status: 'queued' };
      }
      case 'interrupt':
        st.queue.unshift(item);
        this.abortActive(st);
        return { runId: row.id, status: 'started' };
      default:
        break;
    }
    st.queue.push(item);
    return { runId: row.id, status: 'queued' };
  }

  /**
   * This process now holds a session's lease (or, on SQLite, is its only process): load its unfinished runs.
   * A run that was in flight when its process died is re-driven from its last completed step; one paused on an
   * approval waits for it; queued runs follow in order.
   */
  private adopt(key: string, epoch: number | undefined, unfinished?: RunRow[]): Promise<void> {
    const existing = this.sessions.get(key);
    if (existing?.loading) return existing.loading;
    if (existing && epoch === undefined) return Promise.resolve();
    const st = existing ?? this.state(key);
    if (epoch !== undefined) {
      st.epoch = epoch;
      this.o.store.setFence(key, epoch);
    }
    st.loading = (async () => {
      const { store, log } = this.o;
      const rows = unfinished ?? (await store.unfinishedRuns(key));
      for (const row of rows) {
        if (st.known.has(row.id)) continue;
        st.known.add(row.id);
        if (!this.agents.has(agentIdOf(row.session_key) ?? '')) {
          await store.updateRun(row.id, { status: 'interrupted', error: 'agent no longer configured', ended_at: nowIso() });
          continue;
        }
        if (row.status === 'queued') {
          st.queue.push({ runId: row.id, inputs: JSON.parse(row.input), persisted: Promise.resolve(), collect: false, row });
          continue;
        }
        if (st.active) {
          // Two runs in flight for one session cannot happen under a lease; treat the later one as queued work.
          st.queue.push({ runId: row.id, inputs: JSON.parse(row.input), persisted: Promise.resolve(), collect: false });
          continue;
        }
        const active = this.newActive(row.id, key, this.agentForKey(key));
        active.row = row;
        active.started = true;
        st.active = active;
        if (row.cancel_requested !== null) {
          active.cancelled = { reason: row.cancel_requested || undefined };
          st.parked = true; // abortActive closes a parked run here
          continue;
        }
        if (row.status === 'waiting_approval') {
          st.parked = true;
          const pending = await store.pendingApprovals({ runId: row.id });
          if (pending.length) continue;
        } else log.warn({ runId: row.id, sessionKey: key }, 're-driving a run whose process stopped');
        st.parked = true;
      }
    })();
    const loading = st.loading;
    return loading.then(
      () => {
        if (st.loading === loading) st.loading = undefined;
        const active = st.active;
        if (active?.cancelled && st.parked) return this.abortActive(st);
        if (active && st.parked && active.row?.status === 'running') {
          st.parked = false;
          return this.runStarted(st, active, { runId: active.id, inputs: [], persisted: Promise.resolve(), collect: false }, true);
        }
        if (active && st.parked) {
          void this.o.store.pendingApprovals({ runId: active.id }).then((p) => {
            if (!p.length) this.resumeRun(active.id);
          });
          return;
        }
        if (!st.active) this.startNext(st);
      },
      (e) => {
        if (st.loading === loading) st.loading = undefined;
        this.o.log.error({ err: e, sessionKey: key }, 'could not load a session after claiming it');
      },
    );
  }

  /** Control messages from other processes, for sessions this process drives. */
  async onControl(msg: ControlMessage): Promise<void> {
    if (msg.kind === 'events') return;
    const st = this.sessions.get(msg.sessionKey);
    if (!st) {
      // Not ours (any more): if no one holds it, take it.
      await this.claimOrphan(msg.sessionKey);
      return;
    }
    if (st.loading) await st.loading;
    switch (msg.kind) {
      case 'work': {
        for (const row of await this.o.store.queuedRuns(msg.sessionKey)) if (!st.known.has(row.id)) this.placeStored(st, row);
        return;
      }
      case 'cancel': {
        const row = await this.o.store.getRun(msg.runId);
        if (st.active?.id === msg.runId) {
          st.active.cancelled = { reason: row?.cancel_requested || undefined };
          this.abortActive(st);
        }
        return;
      }
      case 'approval':
        return this.approvals.deliver(msg.approvalId);
    }
  }

  /** Claims a session no process holds (its owner died or stopped) and drives its unfinished runs. */
  async claimOrphan(key: string): Promise<void> {
    if (!this.cluster || this.stopping || this.sessions.has(key)) return;
    const epoch = await this.cluster.claim(key);
    if (epoch === null) return;
    this.o.log.info({ sessionKey: key, epoch }, 'cluster: took over a session');
    await this.adopt(key, epoch);
    const st = this.sessions.get(key);
    if (st && !st.active && !st.queue.length) await this.releaseIdle(st);
  }

  private orphanSweep: Promise<void> | null = null;
  /** The cluster's sweeper found (or may have) sessions without an owner; also delivers callbacks left pending. */
  sweepOrphans(): void {
    if (this.orphanSweep || this.stopping || !this.cluster) return;
    this.orphanSweep = (async () => {
      try {
        for (const key of await this.cluster!.orphans()) await this.claimOrphan(key);
        for (const cb of await this.o.store.pendingCallbacks(2000)) await this.deliverCallback(cb);
      } catch (e) {
        this.o.log.warn({ err: (e as Error).message }, 'cluster: orphan sweep failed');
      } finally {
        this.orphanSweep = null;
      }
    })();
  }

  /** An idle session with nothing queued lets its lease go (unless work arrived: then it runs it). */
  private async releaseIdle(st: SessionState): Promise<void> {
    if (!this.cluster || st.active || st.queue.length || st.loading) return;
    const released = await this.o.store.releaseIfIdle(st.key, this.cluster.id);
    if (st.active || st.queue.length) return;
    if (released) {
      if (this.sessions.get(st.key) === st) this.sessions.delete(st.key);
      this.o.store.clearFence(st.key, st.epoch);
    } else {
      for (const row of await this.o.store.queuedRuns(st.key)) if (!st.known.has(row.id)) this.placeStored(st, row);
    }
  }

  /** This process was declared dead by the others: everything it drove is someone else's now. */
  fenced(): void {
    for (const st of this.sessions.values()) st.active?.abort.abort(SHUTDOWN);
    for (const key of this.sessions.keys()) this.o.store.clearFence(key);
    this.sessions.clear();
  }

  /** Whether this process waits for a run it does not drive (the event feed must read the log for it). */
  waitingElsewhere(): boolean {
    return this.remoteWaits > 0;
  }

  private remoteWaits = 0;

  /** A run ended in another process (seen in the event log): answer this process's waiters. */
  remoteEnded(runId: string): void {
    if (!this.waiters.has(runId)) return;
    void this.o.store.getRun(runId).then((row) => {
      if (!row || !TERMINAL.has(row.status)) return;
      const ws = this.waiters.get(runId);
      if (ws) for (const w of ws) w(waitResultOf(row));
    });
  }

  /**
   * An approval was decided where its run is not waiting in this process's memory: resume a run parked here,
   * tell the process that drives it, or take the session over when no one does.
   */
  private async decisionElsewhere(row: ApprovalRow): Promise<void> {
    const st = [...this.sessions.values()].find((s) => s.active?.id === row.run_id);
    if (st || !this.cluster) {
      await this.emitResolved(row);
      if (st?.parked) this.resumeRun(row.run_id);
      return;
    }
    const owner = await this.cluster.ownerOf(row.session_key);
    if (owner && owner !== this.cluster.id) return this.cluster.notify({ kind: 'approval', to: owner, sessionKey: row.session_key, approvalId: row.id });
    if (!owner) {
      const epoch = await this.cluster.claim(row.session_key);
      if (epoch !== null) {
        await this.emitResolved(row);
        await this.adopt(row.session_key, epoch);
      } else {
        const now = await this.cluster.ownerOf(row.session_key);
        if (now && now !== this.cluster.id) await this.cluster.notify({ kind: 'approval', to: now, sessionKey: row.session_key, approvalId: row.id });
      }
    }
  }

  private async emitResolved(row: ApprovalRow): Promise<void> {
    this.o.bus.registerRun(row.run_id, row.session_key, await this.o.store.maxSeq(row.run_id));
    this.o.bus.emit(row.run_id, 'approval', { phase: 'resolved', approvalId: row.id, decision: row.decision ?? row.status, ...(row.reason ? { reason: row.reason } : {}) });
  }

  /** A session is being deleted: its queued messages end as errors (nothing runs against a missing session), the active run is aborted. */
  async dropSession(key: string): Promise<void> {
    const st = this.sessions.get(key);
    if (!st && this.cluster) {
      // Driven by another process (or none): end what is queued, cancel what runs, wherever it runs.
      for (const row of await this.o.store.unfinishedRuns(key)) {
        if (row.status === 'queued') await this.endUnstarted(row.id, key, 'session deleted');
        else await this.cancel(row.id, 'session deleted').catch(() => undefined);
      }
      return;
    }
    if (!st) return;
    // Messages steered into the active run go with it: they must not run after it as follow-ups.
    const queued = [...st.queue.splice(0), ...(st.active?.inbox.splice(0) ?? []).map((i) => ({ runId: i.runId, persisted: i.persisted }))];
    for (const item of queued) {
      await item.persisted.catch(() => undefined);
      await this.o.store.updateRun(item.runId, { status: 'error', error: 'session deleted', ended_at: nowIso() });
      const ws = this.waiters.get(item.runId);
      if (ws) for (const w of ws) w({ status: 'error', error: 'session deleted' });
    }
    const active = st.active;
    this.abortActive(st);
    // Let the aborted run write its last rows and events before the caller deletes them (none may come back later).
    if (active) await this.wait(active.id, 30_000).catch(() => undefined);
    await this.o.bus.drain();
  }

  /**
   * `agent.cancel`: a running run is aborted at once (a tool in flight is killed), a queued one never runs;
   * either ends `error` / `cancelled`. An ended run is `not_cancelable`.
   */
  async cancel(runId: string, reason?: string): Promise<void> {
    const row = await this.o.store.getRun(runId);
    if (!row) throw new CrosstalkError('unknown_run', `no run ${runId}`);
    if (row.status === 'merged' && row.merged_into) return this.cancel(row.merged_into, reason);
    const st = this.sessions.get(row.session_key);
    if (st?.active?.id === runId) {
      st.active.cancelled = { reason };
      this.abortActive(st);
      return;
    }
    const queued = st?.queue.findIndex((q) => q.runId === runId) ?? -1;
    if (st && queued >= 0) {
      const [item] = st.queue.splice(queued, 1);
      await item!.persisted.catch(() => undefined);
      await this.endUnstarted(runId, row.session_key, 'cancelled');
      return;
    }
    if (TERMINAL.has(row.status) || row.status === 'merged') throw new CrosstalkError('not_cancelable', `run ${runId} has already ended (${row.status})`);
    if (row.status === 'queued') {
      // Known to the store but not running here: whoever would start it finds it ended (the start is conditional).
      if (!(await this.endUnstarted(runId, row.session_key, 'cancelled'))) return this.cancel(runId, reason);
      if (this.cluster) {
        const owner = await this.cluster.ownerOf(row.session_key);
        if (owner && owner !== this.cluster.id) await this.cluster.notify({ kind: 'work', to: owner, sessionKey: row.session_key });
      }
      return;
    }
    if (!this.cluster) throw new CrosstalkError('not_cancelable', `run ${runId} is not running in this process`);
    // Running (or paused on an approval) in another process, or in none: record the request, tell the owner.
    await this.o.store.updateRun(runId, { cancel_requested: reason ?? '' });
    const owner = await this.cluster.ownerOf(row.session_key);
    if (owner && owner !== this.cluster.id) await this.cluster.notify({ kind: 'cancel', to: owner, sessionKey: row.session_key, runId });
    else if (!owner) await this.claimOrphan(row.session_key);
  }

  /** Ends a run that never started: its row, its lifecycle event and its waiters (false: it had started meanwhile). */
  private async endUnstarted(runId: string, sessionKey: string, error: string): Promise<boolean> {
    if (!(await this.o.store.endQueued(runId, error))) return false;
    this.o.bus.registerRun(runId, sessionKey, await this.o.store.maxSeq(runId));
    this.o.bus.emit(runId, 'lifecycle', { phase: 'error', status: 'error', error });
    this.o.bus.unregisterRun(runId);
    const ws = this.waiters.get(runId);
    if (ws) for (const w of ws) w({ status: 'error', error });
    return true;
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
      void this.finish(s, active, { status: 'interrupted', error: 'run interrupted' });
    }
  }

  private start(st: SessionState, item: QueueItem, resume: boolean): ActiveRun {
    const active = this.newActive(item.runId, st.key, this.agentForKey(st.key));
    st.active = active;
    this.running.set(active.id, st.key);
    const p = this.execute(st, active, item, resume);
    this.live.add(p);
    void p.finally(() => this.live.delete(p));
    return active;
  }

  private async execute(st: SessionState, active: ActiveRun, item: QueueItem, resume: boolean): Promise<void> {
    let outcome: RunOutcome;
    this.o.metrics.activeRuns.inc();
    try {
      await item.persisted;
      const row = item.row ?? (await this.o.store.getRun(item.runId));
      if (!row) throw new Error(`run ${item.runId} vanished`);
      active.row = row;
      startRunTrace(this.deps, active, row);
      this.o.bus.registerRun(active.id, st.key, resume ? await this.o.store.maxSeq(active.id) : 0);
      // `collect` turns its queued messages into one user turn.
      const inputs = item.collect && item.inputs.length > 1 ? [mergeInputs(item.inputs)] : item.inputs;
      const run = () => executeRun(this.deps, active, { ...row, input: JSON.stringify(inputs) }, resume);
      outcome = process.env.CROSSTALK_BENCH_GLOBAL_LOCK ? await this.underGlobalLock(run) : await run();
    } catch (e) {
      if (e instanceof FencedError || active.abort.signal.reason === SHUTDOWN) outcome = { status: 'abandoned', error: 'fenced' };
      else {
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
  private async underGlobalLock<T>(fn: () => Promise<T>): Promise<T> {
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
   * Drops a run this process does not finish: `skipped` (it was cancelled before it started: the next one runs),
   * or the process stopped driving the session (a graceful stop, or its lease was taken over): nothing is written.
   */
  private abandon(st: SessionState, active: ActiveRun, why: 'skipped' | 'stopped') {
    markStarted(active);
    this.o.store.takeUsage([active.id]); // a step's usage goes with its rows, which this run no longer writes
    this.running.delete(active.id);
    this.o.bus.unregisterRun(active.id);
    st.known.delete(active.id);
    if (st.active === active) st.active = null;
    if (why === 'skipped' && !this.stopping) return this.startNext(st);
    if (this.sessions.get(st.key) === st) {
      this.sessions.delete(st.key);
      this.o.store.clearFence(st.key, st.epoch);
    }
  }

  private async finish(st: SessionState, active: ActiveRun, outcome: RunOutcome): Promise<void> {
    const { store, bus, metrics, log } = this.o;
    if (outcome.status === 'abandoned' || (this.stopping && active.abort.signal.reason === SHUTDOWN)) return this.abandon(st, active, outcome.error === 'skipped' ? 'skipped' : 'stopped');
    if (active.cancelled && outcome.status === 'interrupted') outcome = { status: 'error', error: 'cancelled', response: outcome.response };
    let released = false;
    const epoch = st.epoch;
    markStarted(active); // a run that failed before writing its input must not hold `agent` up
    let deliveries: ReturnType<typeof planDeliveries> = { callbacks: [], webhooks: [], failed: [] };
    try {
      const own = active.row ?? (await store.getRun(active.id));
      const merged = active.injected ? (await store.mergedInto(active.id)).filter((r) => r.status === 'merged') : []; // not a failed run pointing here (continuedIn)
      deliveries = planDeliveries({ runId: active.id, sessionKey: st.key, agentId: active.agent.id, agentName: active.agent.name }, [...(own ? [own] : []), ...merged], outcome);
      stampTrace(deliveries, active.traceparent);
      // The run's end event (and its last rows' events, and those of its events not yet flushed) are written with
      // its end in one transaction: once another process claims the session, nothing more of this run could be
      // written, and whoever sees the end event finds the run ended.
      const earlier = await bus.takeRun(active.id);
      if (bus.currentSeq(active.id) === 0) bus.registerRun(active.id, st.key, await store.maxSeq(active.id).catch(() => 0));
      const finalRows = active.finalRows ?? [];
      // The run's end, its last rows, callbacks and webhooks are one transaction: a crash after it still delivers them.
      const end = await store.finishRun(
        active.id,
        { status: outcome.status, response: outcome.response ?? null, error: outcome.error ?? null, ended_at: nowIso(), last_seq: bus.currentSeq(active.id) + finalRows.length + 1 },
        deliveries.callbacks,
        deliveries.webhooks,
        { key: st.key, idle: !st.queue.length && !active.inbox.length, release: !!this.cluster },
        { messages: finalRows, events: (rows) => [...earlier, ...rows.map((m) => bus.prepare(active.id, 'message', { message: m })), bus.prepare(active.id, 'lifecycle', endData(outcome))] },
      );
      released = end.released;
      bus.logged(end.events, end.ids);
      if (deliveries.callbacks.length) failpoint('callback.recorded');
    } catch (e) {
      if (e instanceof FencedError) return this.abandon(st, active, 'stopped');
      log.error({ err: e, runId: active.id }, 'could not record run end');
    }
    bus.unregisterRun(active.id);
    st.known.delete(active.id);
    endRunTrace(this.deps, active, outcome);
    metrics.runs.inc({ outcome: outcome.status });
    if (outcome.status === 'ok') {
      const posted = active.counters.get('posted') ?? 0;
      metrics.messagesPerRun.observe(posted);
      if (posted === 0) {
        metrics.silence.inc();
        log.info({ runId: active.id, sessionKey: st.key, reason: 'agent_chose_silence' }, 'run posted nothing');
      }
    }
    // Messages steered into a run that then failed run as a follow-up: the run points at it (agent.wait, the end event).
    const continuedIn = outcome.status !== 'ok' && !active.cancelled ? active.inbox[0]?.runId : undefined;
    if (continuedIn) await store.updateRun(active.id, { merged_into: continuedIn }).catch((e) => log.error({ err: e }, 'could not record the follow-up'));
    const result = { ...waitResultOf({ status: outcome.status, response: outcome.response ?? null, error: outcome.error ?? null }), ...(continuedIn ? { continuedIn } : {}) };
    this.running.delete(active.id);
    const ws = this.waiters.get(active.id);
    if (ws) for (const w of ws) w(result);
    for (const cb of deliveries.callbacks) void this.deliverCallback(cb);
    for (const f of deliveries.failed) void this.reportFailedTarget(f.callerSessionKey, active.id, st.key, outcome);
    if (deliveries.webhooks.length) this.webhooks?.kick();

    // Synchronous from here: messages steered too late become follow-ups, then the next queued run starts.
    active.closing = true;
    for (const left of active.inbox.splice(0)) st.queue.push({ runId: left.runId, inputs: [left.input], persisted: left.persisted, collect: false });
    if (st.active === active) st.active = null;
    if (released && !st.queue.length) {
      // The lease is gone with the run's end: another process may claim the session from now on.
      if (this.sessions.get(st.key) === st) this.sessions.delete(st.key);
      this.o.store.clearFence(st.key, epoch);
      return;
    }
    if (released) {
      // Work arrived after the release was decided: claim the session again (or leave it to whoever did).
      const again = st.queue.splice(0);
      if (this.sessions.get(st.key) === st) this.sessions.delete(st.key);
      this.o.store.clearFence(st.key, epoch);
      void this.claimOrphan(st.key).then(async () => {
        if (!again.length || this.sessions.has(st.key) || !this.cluster) return;
        const o = await this.cluster.ownerOf(st.key);
        if (o && o !== this.cluster.id) await this.cluster.notify({ kind: 'work', to: o, sessionKey: st.key });
      });
      return;
    }
    if (this.cluster && !st.queue.length) {
      // Not released: queued work from another process arrived meanwhile. Take it in.
      void this.o.store
        .queuedRuns(st.key)
        .then(async (rows) => {
          for (const row of rows) if (!st.known.has(row.id)) this.placeStored(st, row);
          if (!st.active) await this.releaseIdle(st);
        })
        .catch((e) => this.o.log.warn({ err: (e as Error).message, sessionKey: st.key }, 'could not take in queued work'));
      return;
    }
    this.startNext(st);
  }

  private startNext(st: SessionState): void {
    if (st.active || st.loading) return;
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

  /** Set by boot: the webhook dispatcher to wake when a run leaves webhooks behind (SQLite; PostgreSQL's jobs wake by NOTIFY). */
  webhooks?: WebhookDispatcher;

  /** Delivers one recorded callback as a caller turn, exactly once (its run id is derived from the callback id). */
  async deliverCallback(cb: CallbackRow): Promise<void> {
    const { store, log } = this.o;
    try {
      const caller = await store.getSession(cb.caller_session_key);
      if (!caller || !this.agents.has(caller.agent_id)) {
        await store.settleCallback(cb.id, 'dropped', 'unknown_session');
        log.warn({ callbackId: cb.id, caller: cb.caller_session_key }, 'callback dropped: the caller session no longer exists');
        return;
      }
      const meta = JSON.parse(cb.meta ?? '{}') as { fromAgentId?: string; fromAgentName?: string; endedAt?: string; delegate?: unknown; trust?: unknown; traceparent?: string };
      await this.submit(
        cb.caller_session_key,
        {
          content: cb.response,
          kind: 'agent_callback_result',
          author: { type: 'agent', id: meta.fromAgentId ?? 'unknown', ...(meta.fromAgentName ? { name: meta.fromAgentName } : {}) },
          meta: { fromSessionKey: cb.target_session_key, runId: cb.target_run_id, targetEndedAt: meta.endedAt, ...(meta.delegate ? { delegate: meta.delegate } : {}) },
        },
        { runId: `run_${cb.id}`, neverRefuse: true, origin: { callbackOf: cb.target_run_id, ...carryTrust(meta), ...(meta.traceparent ? { traceparent: meta.traceparent } : {}) } },
      );
      await store.settleCallback(cb.id, 'delivered');
    } catch (e) {
      log.error({ err: e, callbackId: cb.id }, 'callback delivery failed; it stays pending for the next start');
    }
  }

  private async reportFailedTarget(callerKey: string, targetRunId: string, targetKey: string, outcome: RunOutcome) {
    this.o.log.warn({ caller: callerKey, targetRunId, error: outcome.error }, 'target run failed: no callback');
    try {
      const id = `evt_${crypto.randomUUID()}`;
      this.o.bus.registerRun(id, callerKey, 0);
      this.o.bus.emit(id, 'error', { code: 'target_run_failed', targetRunId, targetSessionKey: targetKey, status: outcome.status, error: outcome.error ?? outcome.status });
      this.o.bus.unregisterRun(id);
    } catch (e) {
      this.o.log.error({ err: e }, 'could not emit target failure');
    }
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
  private runStarted(st: SessionState, active: ActiveRun, item: QueueItem, resume: boolean): void {
    const p = this.execute(st, active, item, resume);
    this.live.add(p);
    void p.finally(() => this.live.delete(p));
  }

  /** Waits for a run's end; `timeout` when it has not ended in time (the run goes on). */
  async wait(runId: string, timeoutMs: number): Promise<WaitResult> {
    let resolveWait!: (r: WaitResult) => void;
    const done = new Promise<WaitResult>((r) => (resolveWait = r));
    let set = this.waiters.get(runId);
    if (!set) this.waiters.set(runId, (set = new Set()));
    set.add(resolveWait);
    let timer: NodeJS.Timeout | undefined;
    try {
      // A run in flight here needs no read: its end resolves the waiter registered above.
      let sessionKey = this.running.get(runId);
      if (sessionKey === undefined) {
        const row = await this.o.store.getRun(runId);
        if (!row) throw new CrosstalkError('unknown_run', `no run ${runId}`);
        if (TERMINAL.has(row.status)) return { ...waitResultOf(row), ...(row.status !== 'ok' && row.merged_into ? { continuedIn: row.merged_into } : {}) };
        if (row.status === 'merged' && row.merged_into) return this.wait(row.merged_into, timeoutMs);
        sessionKey = row.session_key;
      }
      const timeout = new Promise<WaitResult>((r) => (timer = setTimeout(() => r({ status: 'timeout' }), timeoutMs)));
      if (!this.cluster) return await Promise.race([done, timeout]);
      // Several processes: the run may end elsewhere. The event feed wakes us (remoteEnded; it reads the log only
      // while someone here waits for a run driven elsewhere); a slow poll backs it.
      const st = this.sessions.get(sessionKey);
      const elsewhere = !(st && (st.active?.id === runId || st.queue.some((q) => q.runId === runId)));
      if (elsewhere) this.remoteWaits++;
      let poll: NodeJS.Timeout | undefined;
      const polled = new Promise<WaitResult>((r) => {
        poll = setInterval(() => {
          void this.o.store.getRun(runId).then((x) => {
            if (x && TERMINAL.has(x.status)) r(waitResultOf(x));
          }, () => undefined);
        }, 1000);
      });
      try {
        return await Promise.race([done, timeout, polled]);
      } finally {
        clearInterval(poll);
        if (elsewhere) this.remoteWaits--;
      }
    } finally {
      clearTimeout(timer);
      set.delete(resolveWait);
      if (!set.size) this.waiters.delete(runId);
    }
  }

  /**
   * Start-up. SQLite (this process is the store's only one): every session with unfinished runs is taken in;
   * a run that was in flight is re-driven, a paused one waits for its approval, queued ones run. PostgreSQL:
   * the cluster's sweep hands this process the sessions no living process holds.
   */
  async recover(): Promise<void> {
    const { store } = this.o;
    if (this.cluster) {
      this.sweepOrphans();
      await this.orphanSweep;
      return;
    }
    await store.db.updateTable('sessions').set({ status: 'idle' }).where('status', '=', 'running').execute();
    const keys = new Set((await store.runsWithStatus(['running', 'waiting_approval', 'queued'])).map((r) => r.session_key));
    for (const key of keys) await this.adopt(key, undefined);
    for (const st of this.sessions.values()) if (st.active) await store.patchSession(st.key, { status: 'running' });
    // Callbacks recorded before a stop but not yet turned into caller turns.
    for (const cb of await store.pendingCallbacks()) await this.deliverCallback(cb);
  }

  /** Lets running work settle (tests, graceful shutdown). */
  async idle(): Promise<void> {
    while (this.live.size) await Promise.allSettled([...this.live]);
    await this.o.bus.drain();
  }

  /**
   * A graceful stop: runs are stopped where they are and left for a re-drive (pending approvals stay pending);
   * on PostgreSQL the leases are released so the other processes take the sessions over at once.
   */
  async shutdown(): Promise<void> {
    this.stopping = true;
    await this.orphanSweep;
    const keys = [...this.sessions.keys()];
    for (const st of this.sessions.values()) st.active?.abort.abort(SHUTDOWN);
    await this.idle();
    if (this.cluster) for (const key of keys) await this.cluster.release(key).catch(() => undefined);
    this.sessions.clear();
  }

}

function endData(outcome: RunOutcome): Record<string, unknown> {
  return outcome.status === 'ok'
    ? { phase: 'end', status: 'ok', response: outcome.response ?? '' }
    : { phase: 'error', status: outcome.status, error: outcome.error ?? outcome.status };
}

function mergeInputs(inputs: RunInput[]): RunInput {
  return { ...inputs[0]!, content: inputs.map((i) => i.content).join('\n\n'), meta: { ...inputs[0]!.meta, collected: inputs.length } };
}

const parseOrigin = (o: string | null): unknown => (o ? JSON.parse(o) : null);
