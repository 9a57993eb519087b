// A run's end and its settlement (RunQueues → RunEnds): the end written in one transaction with its last rows,
// callbacks and webhooks, its waiters answered, the next queued run started or the lease let go; a dropped run.
import crypto from 'node:crypto';
import type { CallbackRow } from '../store/schema';
import { FencedError, nowIso } from '../store/store';
import { isCutOff } from '../store/pg-errors';
import { runErrorCode } from '../errors';
import { callbackDeliveryId, planDeliveries } from './callbacks';
import { markStarted } from './started';
import { failpoint } from '../failpoints';
import type { WebhookDispatcher } from '../webhooks/deliver';
import type { ActiveRun, RunOutcome } from './types';
import { carryTrust } from '../trust/trust';
import { endRunTrace } from './run-hooks';
import { stampTrace } from '../telemetry/propagation';
import { endData, SHUTDOWN, type SessionState, waitResultOf } from './queue';
import { RunQueues } from './run-queues';

export abstract class RunEnds extends RunQueues {
  /**
   * Drops a run this process does not finish: `skipped` (it was cancelled before it started: the next one runs),
   * or the process stopped driving the session (a graceful stop, or its lease was taken over): nothing is written.
   */
  protected abandon(st: SessionState, active: ActiveRun, why: 'skipped' | 'stopped') {
    markStarted(active);
    this.o.store.takeUsage([active.id]); // a step's usage goes with its rows, which this run no longer writes
    this.running.delete(active.id);
    this.o.bus.unregisterRun(active.id);
    st.known.delete(active.id);
    if (st.active === active) st.active = null;
    if (why === 'skipped' && !this.stopping) return this.startNext(st);
    if (this.sessions.get(st.key) === st) this.sessions.delete(st.key);
    // The run is over here: its stale epoch (kept by `fenced()` while it was ending) goes; a newer claim's stays.
    this.o.store.clearFence(st.key, st.epoch);
  }

  protected async finish(st: SessionState, active: ActiveRun, outcome: RunOutcome): Promise<void> {
    const { store, bus, metrics, log } = this.o;
    // Aborted with SHUTDOWN (a graceful stop, or this process was told it is dead): whatever the run reached, it is
    // someone else's to finish (re-driven from its last step); nothing of its end is written here.
    if (outcome.status === 'abandoned' || active.abort.signal.reason === SHUTDOWN) return this.abandon(st, active, outcome.error === 'skipped' ? 'skipped' : 'stopped');
    if (active.cancelled && outcome.status === 'error' && outcome.error === 'interrupted') outcome = { status: 'error', error: 'cancelled', response: outcome.response };
    let released = false;
    let recorded = false;
    const epoch = st.epoch;
    markStarted(active); // a run that failed before writing its input must not hold `agent` up
    let deliveries: ReturnType<typeof planDeliveries> = { callbacks: [], webhooks: [], failed: [], records: { answered: [], failed: [], created: [] } };
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
        { key: st.key, idle: !st.queue.length && !active.inbox.length, release: !!this.cluster, leased: !!this.cluster },
        {
          messages: finalRows,
          events: (rows) => [...earlier, ...rows.map((m) => bus.prepare(active.id, 'message', { message: m })), bus.prepare(active.id, 'lifecycle', endData(outcome))],
          deliveries: deliveries.records,
          logged: (events, ids) => bus.logged(events, ids), // in log order: by the store, once written
          before: bus.loggedOf(active.id), // its events written so far: with the end's, its whole log to fold
        },
      );
      // An enqueue in this process may have claimed the session again between the release and here (it took this
      // state over with a new epoch): the session is held then, not let go.
      released = end.released && st.epoch === epoch;
      recorded = true;
      // Its end is committed under this process's lease: its text deltas can be folded (replay expands them).
      // A fold that fails (its connection lost at a PostgreSQL restart: "could not fold the run's text deltas") is one
      // transaction or statement rolled back, or committed whole if only its reply was lost: either way replay stays
      // exact (the deltas stay unfolded rows, read as they are). It is not tried again: the run's deltas take more rows.
      store.foldLater(active.id, (e) => log.warn({ runId: active.id, err: (e as Error).message }, 'could not fold the run\'s text deltas'), end.folds);
      if (deliveries.callbacks.length) failpoint('callback.recorded');
    } catch (e) {
      if (e instanceof FencedError) return this.abandon(st, active, 'stopped');
      if (this.cluster && isCutOff(e)) {
        // The end was not recorded (or not known to be): the run stays unfinished in the store, and the backstop of
        // the orphan sweep re-drives it from its last written step. Ending it here in memory would leave it owned
        // by this process but driven by none. (A deadlock met again after the store's own retries: the same.)
        log.warn({ runId: active.id, err: (e as Error).message }, 'could not record run end: the database connection was lost (or the write lost lock conflicts); it will be re-driven');
        return this.abandon(st, active, 'stopped');
      }
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
    // Messages steered into a run that then failed, or was cancelled or interrupted, run as a follow-up (none is lost):
    // the run points at it (agent.wait, the end event), since `agent` answered those messages with this run's id.
    const continuedIn = outcome.status !== 'ok' ? active.inbox[0]?.runId : undefined;
    if (continuedIn) await store.updateRun(active.id, { merged_into: continuedIn }).catch((e) => log.error({ err: e }, 'could not record the follow-up'));
    const result = { ...waitResultOf({ status: outcome.status, response: outcome.response ?? null, error: outcome.error ?? null }), ...(continuedIn ? { continuedIn } : {}) };
    if (recorded) this.rememberEnd(active.id, result);
    // A failed run may have been the last of a budget-paused tree: its pending item goes with it (CONTRACT §5).
    if (recorded && outcome.status !== 'ok') void this.deps.budgets?.treeEnded(active).catch((e) => log.warn({ err: (e as Error).message, runId: active.id }, 'could not close the tree\'s budget item'));
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

  /** Set by boot: the webhook dispatcher to wake when a run leaves webhooks behind (SQLite; PostgreSQL's jobs wake by NOTIFY). */
  webhooks?: WebhookDispatcher;

  /**
   * Whether the caller's session was deleted and made again under its key since the call: then the callback is not
   * the new session's (it starts empty). The calling run moved to the deleted session's archive key (Store.deleteSession);
   * a call from outside a run is older than a session created after its target run.
   */
  private async callerReplaced(cb: CallbackRow, callerCreatedAt: string): Promise<boolean> {
    const { store } = this.o;
    if (cb.caller_run_id) {
      const from = await store.getRun(cb.caller_run_id);
      if (from) return from.session_key !== cb.caller_session_key;
    }
    const target = await store.getRun(cb.target_run_id);
    return !!target && callerCreatedAt > target.created_at;
  }

  /** Delivers one recorded callback as a caller turn, exactly once (its run id is derived from the callback id). */
  async deliverCallback(cb: CallbackRow): Promise<void> {
    const { store, log } = this.o;
    try {
      const meta = JSON.parse(cb.meta ?? '{}') as { fromAgentId?: string; fromAgentName?: string; endedAt?: string; delegate?: unknown; trust?: unknown; traceparent?: string; tree?: unknown; answers?: string };
      const caller = await store.getSession(cb.caller_session_key);
      if (!caller || !this.agents.has(caller.agent_id) || (await this.callerReplaced(cb, caller.created_at))) {
        await store.settleCallback(cb.id, 'dropped', { error: 'unknown_session', answers: meta.answers });
        log.warn({ callbackId: cb.id, caller: cb.caller_session_key }, 'callback dropped: the caller session no longer exists');
        return;
      }
      await this.submit(
        cb.caller_session_key,
        {
          content: cb.response,
          kind: 'agent_callback_result',
          author: { type: 'agent', id: meta.fromAgentId ?? 'unknown', ...(meta.fromAgentName ? { name: meta.fromAgentName } : {}) },
          // `answersDeliveryId`: the hand-off this row answers, `answered` with the row's write (CONTRACT §9), which may
          // come later than this submit when the caller is busy (the callback's run waits in its queue).
          meta: {
            fromSessionKey: cb.target_session_key,
            runId: cb.target_run_id,
            targetEndedAt: meta.endedAt,
            deliveryId: callbackDeliveryId(cb.id),
            ...(meta.answers ? { answersDeliveryId: meta.answers } : {}),
            ...(meta.delegate ? { delegate: meta.delegate } : {}),
          },
        },
        { runId: `run_${cb.id}`, neverRefuse: true, origin: { callbackOf: cb.target_run_id, deliveryId: callbackDeliveryId(cb.id), ...carryTrust(meta), ...(meta.tree ? { tree: meta.tree } : {}), ...(meta.traceparent ? { traceparent: meta.traceparent } : {}) } },
      );
      // The callback's run is in the caller's session: delivered (the hand-off is answered with its row's write).
      await store.settleCallback(cb.id, 'delivered');
    } catch (e) {
      log.error({ err: e, callbackId: cb.id }, 'callback delivery failed; it stays pending for the next start');
    }
  }

  protected async reportFailedTarget(callerKey: string, targetRunId: string, targetKey: string, outcome: RunOutcome) {
    this.o.log.warn({ caller: callerKey, targetRunId, error: outcome.error }, 'target run failed: no callback');
    try {
      const id = `evt_${crypto.randomUUID()}`;
      this.o.bus.registerRun(id, callerKey, 0);
      // `code` is a §6 code (the failure's own when it is one); `reason` says what happened.
      const error = outcome.error ?? outcome.status;
      const code = runErrorCode(error);
      this.o.bus.emit(id, 'error', { code, reason: 'target_run_failed', targetRunId, targetSessionKey: targetKey, status: outcome.status, error });
      this.o.bus.unregisterRun(id);
    } catch (e) {
      this.o.log.error({ err: e }, 'could not emit target failure');
    }
  }
}
