// Runs across processes (PostgreSQL; RunQueues → RunEnds → ClusterRuns): leases, a message enqueued for a session
// another process drives, control messages to a session's owner, takeover of a dead or stopped process's sessions.
import type { AgentConfig, QueueMode } from '../config';
import type { ControlMessage } from '../cluster/cluster';
import { CrosstalkError } from '../errors';
import type { AgentResult } from '../gateway/types';
import { agentIdOf, sessionKindOf } from '../sessions/keys';
import { messageValues } from '../store/run-writes';
import { inputToMessage } from './run-loop';
import { resolvedData, survivesRestart } from './approvals';
import type { ApprovalRow, RunRow } from '../store/schema';
import type { DecidedBy } from './approvals';
import { nowIso } from '../store/store';
import { sameTrust, trustOf } from '../trust/trust';
import { collectable, kept, oneInput, parseOrigin, type QueueItem, SHUTDOWN, type SessionState, TERMINAL, type SubmitOptions } from './queue';
import type { ActiveRun, RunInput } from './types';
import { RunEnds } from './run-ends';
import { Backstop } from './backstop';

/** How long a steer sent to another process's session waits for the owner to place it (`placedBy`). */
const STEER_PLACE_MS = 1000;

/** The run a queued row's sender was told it was steered into (`origin.steerInto`), if any. */
export const steerIntoOf = (row: Pick<RunRow, 'origin'>): string | undefined => (parseOrigin(row.origin) as { steerInto?: string } | null)?.steerInto;

export abstract class ClusterRuns extends RunEnds {
  /** The orphan sweep's backstop: sessions held here whose unfinished runs nothing here drives are taken in again. */
  private readonly backstop = new Backstop({
    cluster: () => this.cluster!,
    sessions: this.sessions,
    stopping: () => this.stopping,
    store: this.o.store,
    log: this.o.log,
    adopt: (key, epoch) => this.adopt(key, epoch),
    placeStored: (st, row) => this.placeStored(st, row),
  });

  protected async submitShared(sessionKey: string, agent: AgentConfig, input: RunInput, runId: string, opts: SubmitOptions): Promise<AgentResult> {
    const cluster = this.cluster!;
    const row = this.runRow(runId, sessionKey, [input], opts.queueMode ?? 'followup', opts);
    const start = [messageValues(inputToMessage(sessionKey, runId, input), nowIso())];
    const r = await cluster.enqueue(row, {
      session: { key: sessionKey, agentId: agent.id, kind: sessionKindOf(sessionKey) },
      mode: { asked: opts.queueMode ?? null, fallback: this.o.config.session.queueMode, neverRefuse: !!opts.neverRefuse },
      start,
      // A stopping process takes no lease (a request or a callback turn that arrives during the grace): the run is
      // queued for whoever takes the session, never started here after the stop has let its sessions go.
      claim: !this.stopping,
    }, opts.claim);
    this.o.store.announceMoved(r.deliveries);
    const effective = (row.queue_mode = r.mode) as QueueMode;
    if (!r.inserted) throw new CrosstalkError('agent_busy', `session ${sessionKey} is busy${r.active ? ` with run ${r.active}` : ''}`);
    if (r.started) {
      // The session was free: the statement claimed it and started the run (its input is in the transcript).
      // A state left by a run whose end (and release) raced this claim is not reused: the new lease starts afresh.
      const old = this.sessions.get(sessionKey);
      if (old && (old.active || old.loading || old.queue.length)) this.sessions.delete(sessionKey);
      const st = this.state(sessionKey);
      st.epoch = r.claimed!;
      // A copy of this session's runs still ending here under an older lease (this process was declared dead) keeps
      // its stale fence until it has stopped: the new lease's fence must not let its last writes through.
      const zombies = this.zombiesOf(sessionKey);
      if (zombies) {
        st.loading = zombies;
        await zombies;
        if (st.loading === zombies) st.loading = undefined;
      }
      this.o.store.setFence(sessionKey, r.claimed!);
      st.known.add(runId);
      const startedWith = { rows: this.o.store.writtenRows(start, r.ids, r.session), ...(r.session ? { session: r.session } : {}) };
      this.start(st, { runId, inputs: [input], persisted: Promise.resolve(), collect: false, row: { ...row, status: 'running', started_at: start[0]!.created_at }, startedWith }, false);
      return this.startedAnswer(st, { runId, status: 'started' });
    }
    let owner = r.owner;
    if (r.claimed !== null) {
      await this.adopt(sessionKey, r.claimed, r.unfinished ? [...r.unfinished, row] : undefined);
      owner = cluster.id;
    } else if (owner === null && this.stopping) {
      await cluster.notify({ kind: 'orphans' }).catch(() => undefined);
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
    // A steer is the owner's to place (it alone knows whether its run still takes messages or is ending): the answer
    // waits for its decision. Answering `steered` from here promised the message to a run that had ended meanwhile,
    // or whose process had died, and the client's wait on that run gave an answer without the message (probes E, K).
    if (effective === 'steer' && r.active && sameTrust(trustOf(parseOrigin(row.origin)), trustOf(parseOrigin(r.activeOrigin)))) return this.placedBy(runId);
    return { runId, status: effective === 'interrupt' ? 'started' : 'queued' };
  }

  /**
   * A steer sent to the session's owner: how the owner placed it, once it has. Steered into its run (the row names the
   * run, or was merged into it): that run's id. Otherwise, or when the owner does not answer in time (it died, or is
   * stopped), the message's own run, queued: it is answered there (a later steer by a slow owner merges the row, and
   * `agent.wait` on it follows into that run).
   */
  private async placedBy(runId: string): Promise<AgentResult> {
    const started = Date.now();
    for (let delay = 2; Date.now() - started < STEER_PLACE_MS; delay = Math.min(delay * 2, 100)) {
      await new Promise((r) => setTimeout(r, delay));
      const row = await this.o.store.getRun(runId);
      if (!row) break;
      const into = steerIntoOf(row) ?? (row.status === 'merged' ? row.merged_into : null);
      if (into) return { runId: into, status: 'steered' };
      if (row.status !== 'queued') return { runId, status: 'started' };
    }
    return { runId, status: 'queued' };
  }

  /** Takes a stored queued run into a session this process drives, by its queue mode (as `submit` does locally). */
  protected placeStored(st: SessionState, row: RunRow): AgentResult {
    if (!this.current(st)) {
      // A state dropped meanwhile (declared dead, stopping, or its run ended and let the lease go while the caller
      // awaited) takes nothing in, or two runs of one session could run at once ("duplicate key … runs_one_running").
      // The session's current state here takes the run; with none, the row stays queued for the lease holder (a
      // free session is claimed).
      const current = this.sessions.get(st.key);
      if (current) return this.placeStored(current, row);
      if (this.cluster && !this.stopping) void this.claimOrphan(st.key).catch((e) => this.o.log.warn({ err: (e as Error).message, sessionKey: st.key }, 'could not claim a session'));
      return { runId: row.id, status: 'queued' };
    }
    st.known.add(row.id);
    const inputs = JSON.parse(row.input) as RunInput[];
    const input = oneInput(inputs);
    const trust = trustOf(parseOrigin(row.origin));
    const item: QueueItem = { runId: row.id, inputs: [input], persisted: Promise.resolve(), collect: row.queue_mode === 'collect' && collectable(input), trustKey: JSON.stringify(trust), row };
    if (!st.active) {
      st.queue.push(item);
      this.startNext(st);
      return { runId: row.id, status: (st.active as ActiveRun | null)?.id === row.id ? 'started' : 'queued' };
    }
    switch (row.queue_mode) {
      case 'steer':
        // Trust follows the run: a message is steered only into a run of the same trust (else it runs after).
        if (this.takesSteer(st.active, parseOrigin(row.origin))) {
          const origin = JSON.stringify({ ...(row.origin ? JSON.parse(row.origin) : {}), steerInto: st.active.id });
          st.active.inbox.push({ runId: row.id, input, persisted: kept(this.o.store.updateRunFenced(row.id, st.key, { origin })) });
          return { runId: st.active.id, status: 'steered' };
        }
        break;
      case 'collect': {
        const open = st.queue[st.queue.length - 1];
        if (item.collect && open?.collect && open.trustKey === item.trustKey) {
          open.inputs.push(input);
          const merged = JSON.stringify(open.inputs);
          open.persisted = kept(
            open.persisted.then(() => this.o.store.updateRunFenced(open.runId, st.key, { input: merged })).then(() => this.o.store.updateRunFenced(row.id, st.key, { status: 'merged', merged_into: open.runId })),
          );
          return { runId: open.runId, status: 'queued' };
        }
        st.queue.push(item);
        return { runId: row.id, status: 'queued' };
      }
      case 'interrupt':
        this.interruptWith(st, { ...item, interrupt: true });
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
  protected adopt(key: string, epoch: number | undefined, unfinished?: RunRow[]): Promise<void> {
    const existing = this.sessions.get(key);
    if (existing?.loading) return existing.loading;
    if (existing && epoch === undefined) return Promise.resolve();
    const st = existing ?? this.state(key);
    // A copy of this session's runs still ending here under an older lease (this process was declared dead, then
    // claimed the session again): the new fence waits until it has stopped, so none of its writes pass under it.
    const zombies = epoch !== undefined ? this.zombiesOf(key) : undefined;
    if (epoch !== undefined) {
      st.epoch = epoch;
      if (!zombies) this.o.store.setFence(key, epoch);
    }
    // An interrupt found queued behind the run in flight (below): that run is closed, not re-driven.
    let interruptOnLoad = false;
    st.loading = (async () => {
      const { store, log } = this.o;
      if (zombies) {
        await zombies;
        // Not for a state dropped meanwhile: its stale fence would replace a newer claim's here.
        if (st.epoch === epoch && this.current(st)) this.o.store.setFence(key, epoch!);
      }
      const rows = unfinished ?? (await store.unfinishedRuns(key));
      // Dropped while loading (this process was declared dead, or it is stopping): the lease is someone else's now.
      if (!this.current(st)) return;
      let interrupts = 0;
      for (const row of rows) {
        if (st.known.has(row.id)) continue;
        st.known.add(row.id);
        if (!this.agents.has(agentIdOf(row.session_key) ?? '')) {
          await store.updateRunFenced(row.id, key, { status: 'interrupted', error: 'agent no longer configured', ended_at: nowIso() });
          continue;
        }
        if (row.status === 'queued') {
          const item: QueueItem = { runId: row.id, inputs: JSON.parse(row.input), persisted: Promise.resolve(), collect: false, row };
          // An `interrupt` accepted while the run before it was in flight, whose driver died (or stopped) before it
          // could abort that run: it goes first, and that run is closed `interrupted` below, not re-driven (before,
          // the re-drive finished it, its tools included, and the interrupting message ran after).
          if (row.queue_mode === 'interrupt' && st.active) {
            st.queue.splice(interrupts++, 0, item);
            interruptOnLoad = true;
          } else st.queue.push(item);
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
          const pending = (await store.pendingApprovals({ runId: row.id })).filter(survivesRestart);
          if (pending.length) continue;
        } else log.warn({ runId: row.id, sessionKey: key }, 're-driving a run whose process stopped');
        st.parked = true;
      }
      // Messages whose senders were told they were steered into the run re-driven here (its process died before it
      // took them in) go into it, as they would have there; not into a run that is closed on load.
      const active = st.active as ActiveRun | null;
      if (active && !active.cancelled && !interruptOnLoad) {
        for (let i = 0; i < st.queue.length; i++) {
          const q = st.queue[i]!;
          if (!q.row || q.row.queue_mode !== 'steer' || steerIntoOf(q.row) !== active.id || !this.takesSteer(active, parseOrigin(q.row.origin))) continue;
          st.queue.splice(i--, 1);
          active.inbox.push({ runId: q.runId, input: oneInput(q.inputs), persisted: Promise.resolve() });
        }
      }
    })();
    const loading = st.loading;
    return loading.then(
      () => {
        if (st.loading === loading) st.loading = undefined;
        // A state dropped while it loaded drives nothing: `fenced()` cleared its fence (it had no run executing yet),
        // so a re-drive here would write unfenced beside the lease holder's, and end the run a second time.
        if (!this.current(st)) return;
        const active = st.active;
        if (active?.cancelled && st.parked) return this.abortActive(st);
        if (interruptOnLoad && active && st.parked) return this.abortActive(st);
        if (active && st.parked && active.row?.status === 'running') {
          st.parked = false;
          return this.runStarted(st, active, { runId: active.id, inputs: [], persisted: Promise.resolve(), collect: false }, true);
        }
        if (active && st.parked) {
          void this.o.store.pendingApprovals({ runId: active.id }).then((p) => {
            if (!p.filter(survivesRestart).length) this.resumeRun(active.id);
          });
          return;
        }
        if (!st.active) this.startNext(st);
      },
      (e) => {
        if (st.loading === loading) st.loading = undefined;
        this.o.log.error({ err: e, sessionKey: key }, 'could not load a session after claiming it');
        // Not loaded, so not driven: forget it here (the lease stays) and let the orphan sweep's backstop take it in
        // again, rather than keep an empty state that makes the session look driven.
        if (this.cluster && this.sessions.get(key) === st && !st.active && !st.queue.length) {
          this.sessions.delete(key);
          this.o.store.clearFence(key, st.epoch);
        }
      },
    );
  }

  /** Control messages from other processes, for sessions this process drives. */
  async onControl(msg: ControlMessage): Promise<void> {
    if (msg.kind === 'events' || msg.kind === 'orphans') return;
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
        return this.approvals.deliver(msg.approvalId, msg.by);
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

  protected orphanSweep: Promise<void> | null = null;
  /** The cluster's sweeper found (or may have) sessions without an owner; also delivers callbacks left pending. */
  sweepOrphans(): void {
    if (this.orphanSweep || this.stopping || !this.cluster) return;
    this.orphanSweep = (async () => {
      try {
        for (const key of await this.cluster!.orphans()) await this.claimOrphan(key);
        // A backstop: unfinished work on a session this process holds must be driven here (a message that met a
        // release in flight, a run dropped when PostgreSQL went away, a load that failed are otherwise only picked
        // up here).
        await this.backstop.run();
        for (const cb of await this.o.store.pendingCallbacks(2000)) await this.deliverCallback(cb);
      } catch (e) {
        this.o.log.warn({ err: (e as Error).message }, 'cluster: orphan sweep failed');
      } finally {
        this.orphanSweep = null;
      }
    })();
  }

  /** An idle session with nothing queued lets its lease go (unless work arrived: then it runs it). */
  protected async releaseIdle(st: SessionState): Promise<void> {
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
    for (const st of this.sessions.values()) {
      st.active?.abort.abort(SHUTDOWN);
      const executing = st.active && this.executions.get(st.active.id);
      if (executing) this.zombies.set(st.key, executing);
      // A run still executing keeps its stale epoch until it is abandoned (its last writes are refused, not let
      // through unfenced); a session with nothing executing here lets it go now.
      if (!st.active || st.parked) this.o.store.clearFence(st.key, st.epoch);
    }
    this.sessions.clear();
  }

  /**
   * An approval was decided where its run is not waiting in this process's memory: resume a run parked here,
   * tell the process that drives it, or take the session over when no one does.
   */
  protected async decisionElsewhere(row: ApprovalRow, by?: DecidedBy): Promise<void> {
    let st = [...this.sessions.values()].find((s) => s.active?.id === row.run_id);
    // Driven here under a lease this process has lost (declared dead, not told yet): not ours to resume.
    if (st && this.cluster && !(await this.o.store.holdsLease(st.key))) st = undefined;
    // A run that has ended (cancelled while the decision was being stored) waits for nothing: its stream is closed.
    if (!st && TERMINAL.has((await this.o.store.getRun(row.run_id))?.status ?? '')) return;
    if (st || !this.cluster) {
      await this.emitResolved(row, by);
      if (st?.parked) this.resumeRun(row.run_id);
      return;
    }
    const owner = await this.cluster.ownerOf(row.session_key);
    if (owner && owner !== this.cluster.id) return this.cluster.notify({ kind: 'approval', to: owner, sessionKey: row.session_key, approvalId: row.id, ...(by ? { by } : {}) });
    if (!owner && this.stopping) return this.cluster.notify({ kind: 'orphans' });
    if (!owner) {
      const epoch = await this.cluster.claim(row.session_key);
      if (epoch !== null) {
        await this.emitResolved(row, by);
        await this.adopt(row.session_key, epoch);
      } else {
        const now = await this.cluster.ownerOf(row.session_key);
        if (now && now !== this.cluster.id) await this.cluster.notify({ kind: 'approval', to: now, sessionKey: row.session_key, approvalId: row.id, ...(by ? { by } : {}) });
      }
    }
  }

  private async emitResolved(row: ApprovalRow, by?: DecidedBy): Promise<void> {
    this.o.bus.registerRun(row.run_id, row.session_key, await this.o.store.maxSeq(row.run_id));
    this.o.bus.emit(row.run_id, 'approval', resolvedData(row, by));
  }
}
