// The orchestrator: one actor per session (runs serialised), the five queue modes with no loss, waits, recovery.
import crypto from 'node:crypto';
import type { AgentConfig, CrosstalkConfig, QueueMode } from '../config';
import { CrosstalkError } from '../errors';
import type { EventBus } from '../events/bus';
import type { AgentResult, WaitResult } from '../gateway/types';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics';
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
import type { WebhookOutbox } from '../webhooks/outbox';
import type { CallbackRow } from '../store/schema';
import type { ActiveRun, InboxItem, RunInput, RunOutcome } from './types';
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
}

interface SessionState {
  key: string;
  active: ActiveRun | null;
  /** The active run was paused on an approval before a restart; it resumes when a decision arrives. */
  parked: boolean;
  queue: QueueItem[];
}

const TERMINAL = new Set(['ok', 'error', 'interrupted']);

export const newRunId = () => `run_${crypto.randomUUID()}`;

export function waitResultOf(row: Pick<RunRow, 'status' | 'response' | 'error'>): WaitResult {
  if (row.status === 'ok') return { status: 'ok', response: (row.response ?? '').trim() };
  return { status: 'error', error: row.error ?? row.status, ...(row.response ? { response: row.response.trim() } : {}) };
}

export class Orchestrator {
  readonly approvals: Approvals;
  private readonly sessions = new Map<string, SessionState>();
  private readonly waiters = new Map<string, Set<(r: WaitResult) => void>>();
  private readonly trackers = new Map<string, FallbackTracker>();
  private readonly agents: Map<string, AgentConfig>;
  private readonly deps: RunDeps;
  private readonly live = new Set<Promise<unknown>>();

  constructor(
    private readonly o: { store: Store; bus: EventBus; metrics: Metrics; log: Logger; config: CrosstalkConfig; tools: Map<string, AnyToolDef> } & RunHookDeps,
  ) {
    this.agents = new Map(o.config.agents.map((a) => [a.id, a]));
    this.approvals = new Approvals(o.store, o.bus, o.metrics, (runId) => this.resumeRun(runId));
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

  activeRunCount(): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.active) n++;
    return n;
  }

  private modelFor(run: ActiveRun, sessionModel: string | null) {
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
    if (!st) this.sessions.set(key, (st = { key, active: null, parked: false, queue: [] }));
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
    const st = this.state(sessionKey);
    const runId = opts.runId ?? newRunId();

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
        if (!st.active.closing) {
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
        if (open && open === st.queue[st.queue.length - 1]) {
          open.inputs.push(input);
          const inputs = JSON.stringify(open.inputs);
          open.persisted = open.persisted.then(() => this.o.store.updateRun(open.runId, { input: inputs }));
          await open.persisted;
          return { runId: open.runId, status: 'queued' };
        }
        const item: QueueItem = { runId, inputs: [input], persisted: this.o.store.insertRun(this.runRow(runId, sessionKey, [input], mode, opts)), collect: true };
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

  /** A session is being deleted: its queued messages end as errors (nothing runs against a missing session), the active run is aborted. */
  async dropSession(key: string): Promise<void> {
    const st = this.sessions.get(key);
    if (!st) return;
    const queued = st.queue.splice(0);
    for (const item of queued) {
      await item.persisted.catch(() => undefined);
      await this.o.store.updateRun(item.runId, { status: 'error', error: 'session deleted', ended_at: nowIso() });
      const ws = this.waiters.get(item.runId);
      if (ws) for (const w of ws) w({ status: 'error', error: 'session deleted' });
    }
    this.abortActive(st);
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
    // Known to the store but not to this process (e.g. queued before a restart and not picked up yet).
    await this.endUnstarted(runId, row.session_key, 'cancelled');
  }

  /** Ends a run that never started: its row, its lifecycle event and its waiters. */
  private async endUnstarted(runId: string, sessionKey: string, error: string): Promise<void> {
    await this.o.store.updateRun(runId, { status: 'error', error, ended_at: nowIso() });
    this.o.bus.registerRun(runId, sessionKey, await this.o.store.maxSeq(runId));
    this.o.bus.emit(runId, 'lifecycle', { phase: 'error', status: 'error', error });
    this.o.bus.unregisterRun(runId);
    const ws = this.waiters.get(runId);
    if (ws) for (const w of ws) w({ status: 'error', error });
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
      const row = await this.o.store.getRun(item.runId);
      if (!row) throw new Error(`run ${item.runId} vanished`);
      active.row = row;
      startRunTrace(this.deps, active, row);
      this.o.bus.registerRun(active.id, st.key, resume ? await this.o.store.maxSeq(active.id) : 0);
      // `collect` turns its queued messages into one user turn.
      const inputs = item.collect && item.inputs.length > 1 ? [mergeInputs(item.inputs)] : item.inputs;
      outcome = await executeRun(this.deps, active, { ...row, input: JSON.stringify(inputs) }, resume);
    } catch (e) {
      this.o.log.error({ err: e, runId: active.id }, 'run crashed');
      outcome = { status: 'error', error: e instanceof Error ? e.message : String(e) };
    } finally {
      this.o.metrics.activeRuns.dec();
    }
    await this.finish(st, active, outcome);
  }

  private async finish(st: SessionState, active: ActiveRun, outcome: RunOutcome): Promise<void> {
    const { store, bus, metrics, log } = this.o;
    if (active.cancelled && outcome.status === 'interrupted') outcome = { status: 'error', error: 'cancelled', response: outcome.response };
    markStarted(active); // a run that failed before writing its input must not hold `agent` up
    let deliveries: ReturnType<typeof planDeliveries> = { callbacks: [], webhooks: [], failed: [] };
    try {
      const own = active.row ?? (await store.getRun(active.id));
      const merged = active.injected ? await store.mergedInto(active.id) : [];
      deliveries = planDeliveries({ runId: active.id, sessionKey: st.key, agentId: active.agent.id, agentName: active.agent.name }, [...(own ? [own] : []), ...merged], outcome);
      stampTrace(deliveries, active.traceparent);
      // The run's end, its callbacks and its webhooks are one transaction: a crash after it still delivers them.
      await store.finishRun(
        active.id,
        { status: outcome.status, response: outcome.response ?? null, error: outcome.error ?? null, ended_at: nowIso(), last_seq: bus.currentSeq(active.id) },
        deliveries.callbacks,
        deliveries.webhooks,
        st.queue.length || active.inbox.length ? undefined : st.key,
      );
      if (deliveries.callbacks.length) failpoint('callback.recorded');
    } catch (e) {
      log.error({ err: e, runId: active.id }, 'could not record run end');
    }
    if (bus.currentSeq(active.id) === 0) bus.registerRun(active.id, st.key, await store.maxSeq(active.id).catch(() => 0));
    if (outcome.status === 'ok') bus.emit(active.id, 'lifecycle', { phase: 'end', status: 'ok', response: outcome.response ?? '' });
    else bus.emit(active.id, 'lifecycle', { phase: 'error', status: outcome.status, error: outcome.error ?? outcome.status });
    bus.unregisterRun(active.id);
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
    const result = waitResultOf({ status: outcome.status, response: outcome.response ?? null, error: outcome.error ?? null });
    const ws = this.waiters.get(active.id);
    if (ws) for (const w of ws) w(result);
    for (const cb of deliveries.callbacks) void this.deliverCallback(cb);
    for (const f of deliveries.failed) void this.reportFailedTarget(f.callerSessionKey, active.id, st.key, outcome);
    if (deliveries.webhooks.length) this.webhooks?.kick();

    // Synchronous from here: messages steered too late become follow-ups, then the next queued run starts.
    active.closing = true;
    for (const left of active.inbox.splice(0)) st.queue.push({ runId: left.runId, inputs: [left.input], persisted: left.persisted, collect: false });
    if (st.active === active) st.active = null;
    this.startNext(st);
  }

  private startNext(st: SessionState): void {
    if (st.active) return;
    const next = st.queue.shift();
    if (next) {
      this.start(st, next, false);
      return;
    }
    this.sessions.delete(st.key);
  }

  /** Set by boot: the outbox to wake when a run leaves webhooks behind. */
  webhooks?: WebhookOutbox;

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
      const meta = JSON.parse(cb.meta ?? '{}') as { fromAgentId?: string; fromAgentName?: string; endedAt?: string; delegate?: unknown; traceparent?: string };
      await this.submit(
        cb.caller_session_key,
        {
          content: cb.response,
          kind: 'agent_callback_result',
          author: { type: 'agent', id: meta.fromAgentId ?? 'unknown', ...(meta.fromAgentName ? { name: meta.fromAgentName } : {}) },
          meta: { fromSessionKey: cb.target_session_key, runId: cb.target_run_id, targetEndedAt: meta.endedAt, ...(meta.delegate ? { delegate: meta.delegate } : {}) },
        },
        { runId: `run_${cb.id}`, neverRefuse: true, origin: { callbackOf: cb.target_run_id, ...(meta.traceparent ? { traceparent: meta.traceparent } : {}) } },
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
        const active = st.active;
        const p = this.execute(st, active, { runId, inputs: [], persisted: Promise.resolve(), collect: false }, true);
        this.live.add(p);
        void p.finally(() => this.live.delete(p));
        return;
      }
    }
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
      const row = await this.o.store.getRun(runId);
      if (!row) throw new CrosstalkError('unknown_run', `no run ${runId}`);
      if (TERMINAL.has(row.status)) return waitResultOf(row);
      if (row.status === 'merged' && row.merged_into) return this.wait(row.merged_into, timeoutMs);
      const timeout = new Promise<WaitResult>((r) => (timer = setTimeout(() => r({ status: 'timeout' }), timeoutMs)));
      return await Promise.race([done, timeout]);
    } finally {
      clearTimeout(timer);
      set.delete(resolveWait);
      if (!set.size) this.waiters.delete(runId);
    }
  }

  /** Start-up: interrupted runs are marked so, paused ones wait for their approval, queued ones run. */
  async recover(): Promise<void> {
    const { store, bus, log } = this.o;
    await store.db.updateTable('sessions').set({ status: 'idle' }).where('status', '=', 'running').execute();
    const rows = await store.runsWithStatus(['running', 'waiting_approval', 'queued']);
    for (const row of rows) {
      if (!this.agents.has(agentIdOf(row.session_key) ?? '')) {
        await store.updateRun(row.id, { status: 'error', error: 'agent no longer configured', ended_at: nowIso() });
        continue;
      }
      const st = this.state(row.session_key);
      if (row.status === 'running') {
        await store.updateRun(row.id, { status: 'interrupted', error: 'interrupted by a restart', ended_at: nowIso() });
        bus.registerRun(row.id, row.session_key, await store.maxSeq(row.id));
        bus.emit(row.id, 'lifecycle', { phase: 'error', status: 'interrupted', error: 'interrupted by a restart' });
        bus.unregisterRun(row.id);
        log.warn({ runId: row.id }, 'run interrupted by restart');
      } else if (row.status === 'waiting_approval') {
        if (st.active) {
          st.queue.push({ runId: row.id, inputs: JSON.parse(row.input), persisted: Promise.resolve(), collect: false });
          continue;
        }
        st.active = this.newActive(row.id, row.session_key, this.agentForKey(row.session_key));
        st.parked = true;
        const pending = await store.pendingApprovals({ runId: row.id });
        if (!pending.length) this.resumeRun(row.id);
      } else {
        st.queue.push({ runId: row.id, inputs: JSON.parse(row.input), persisted: Promise.resolve(), collect: false });
      }
    }
    for (const st of this.sessions.values()) if (st.parked) await store.patchSession(st.key, { status: 'running' });
    for (const st of [...this.sessions.values()]) if (!st.active) this.startNext(st);
    // Callbacks recorded before a stop but not yet turned into caller turns.
    for (const cb of await store.pendingCallbacks()) await this.deliverCallback(cb);
  }

  /** Lets running work settle (tests, graceful shutdown). */
  async idle(): Promise<void> {
    while (this.live.size) await Promise.allSettled([...this.live]);
    await this.o.bus.drain();
  }

  shutdown(): void {
    for (const st of this.sessions.values()) st.active?.abort.abort();
  }
}

function mergeInputs(inputs: RunInput[]): RunInput {
  return { ...inputs[0]!, content: inputs.map((i) => i.content).join('\n\n'), meta: { ...inputs[0]!.meta, collected: inputs.length } };
}
