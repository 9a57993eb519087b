// The orchestrator (RunQueues → RunEnds → ClusterRuns → Orchestrator): waits and cancels from any process, a
// session's deletion, recovery at start-up and the graceful stop.
import { CrosstalkError } from '../errors';
import type { WaitResult } from '../gateway/types';
import type { RunRow } from '../store/schema';
import { SHUTDOWN, TERMINAL, waitResultOf } from './queue';
import { ClusterRuns } from './cluster-runs';

export { derivedId, handoverOf, newRunId, SHUTDOWN, type SubmitOptions, waitResultOf } from './queue';

/** A waiter's answer that sends it on to the run its run was merged into (`answerFromRow`). */
const FOLLOW = Symbol('follow');
type Merged = WaitResult & { [FOLLOW]?: string };

export class Orchestrator extends ClusterRuns {
  /** Whether this process waits for a run it does not drive (the event feed must read the log for it). */
  waitingElsewhere(): boolean {
    return this.remoteWaits > 0;
  }

  private remoteWaits = 0;
  /**
   * One poll of the store per run waited for (PostgreSQL), however many wait: each tick that finds the run ended
   * answers all of them. Before, every `agent.wait` polled on its own, every second, for its whole timeout, also when
   * its client had gone: 300 dropped waits on a run pending approval were 300 reads a second (probe F).
   */
  private readonly polls = new Map<string, { timer: NodeJS.Timeout; every: number; waits: number }>();

  /** Joins (or starts) the run's poll at most `every` ms apart; returns the leave. */
  private pollRun(runId: string, every: number): () => void {
    let p = this.polls.get(runId);
    const tick = () => void this.o.store.getRun(runId).then((row) => this.answerFromRow(runId, row), () => undefined);
    if (!p) this.polls.set(runId, (p = { timer: setInterval(tick, every), every, waits: 0 }));
    else if (every < p.every) {
      clearInterval(p.timer);
      (p.timer = setInterval(tick, every)), (p.every = every);
    }
    p.waits++;
    const poll = p;
    return () => {
      if (--poll.waits > 0) return;
      clearInterval(poll.timer);
      if (this.polls.get(runId) === poll) this.polls.delete(runId);
    };
  }

  /** Runs polled now, and how many waits share each poll (tests). */
  pollsNow(): Map<string, number> {
    return new Map([...this.polls].map(([id, p]) => [id, p.waits]));
  }

  /** A run ended in another process (seen in the event log): answer this process's waiters. */
  remoteEnded(runId: string): void {
    if (!this.waiters.has(runId)) return;
    void this.o.store.getRun(runId).then((row) => this.answerFromRow(runId, row));
  }

  /**
   * Answers a run's waiters from its row, once it has ended; a queued run merged into another (a steer or collect
   * placed by the session's owner after this process answered `queued`) sends them on to that run. Before, such a wait
   * ran to its timeout (probe K).
   */
  private answerFromRow(runId: string, row: RunRow | undefined): void {
    if (!row) return;
    const merged = row.status === 'merged' && row.merged_into ? row.merged_into : null;
    if (!merged && !TERMINAL.has(row.status)) return;
    const ws = this.waiters.get(runId);
    if (ws) for (const w of ws) w(merged ? ({ status: 'timeout', [FOLLOW]: merged } as Merged) : waitResultOf(row));
  }

  /** A session is being deleted: its queued messages end as errors (nothing runs against a missing session), the active run is aborted. */
  async dropSession(key: string): Promise<void> {
    const st = this.sessions.get(key);
    if (!st && this.cluster) {
      // Driven by another process (or none): end what is queued, cancel what runs, wherever it runs.
      const ending: string[] = [];
      for (const row of await this.o.store.unfinishedRuns(key)) {
        if (row.status === 'queued') await this.endUnstarted(row.id, key, 'session deleted');
        else {
          await this.cancel(row.id, 'session deleted').catch(() => undefined);
          ending.push(row.id);
        }
      }
      // As for a run here: the caller deletes once they have ended (bounded), so none of their writes come after.
      for (const id of ending) await this.wait(id, 30_000).catch(() => undefined);
      return;
    }
    if (!st) return;
    // Messages steered into the active run go with it: they must not run after it as follow-ups.
    const queued = [...st.queue.splice(0), ...(st.active?.inbox.splice(0) ?? []).map((i) => ({ runId: i.runId, persisted: i.persisted }))];
    for (const item of queued) {
      await item.persisted.catch(() => undefined);
      await this.o.store.endQueued(item.runId, 'session deleted'); // its hand-offs fail with it
      const ws = this.waiters.get(item.runId);
      if (ws) for (const w of ws) w({ status: 'error', error: 'session deleted' });
    }
    const active = st.active;
    // Ended as `agent.cancel` ends it (and as the cluster path above does): `interrupted` is for a run that cannot be
    // re-driven (CONTRACT §4), which this one could have been.
    if (active) active.cancelled = { reason: 'session deleted' };
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

  /**
   * Waits for a run's end; `timeout` when it has not ended in time, or when `stop` aborts first (the run goes on
   * either way).
   */
  async wait(runId: string, timeoutMs: number, stop?: AbortSignal): Promise<WaitResult> {
    let resolveWait!: (r: WaitResult) => void;
    const done = new Promise<WaitResult>((r) => (resolveWait = r));
    let set = this.waiters.get(runId);
    if (!set) this.waiters.set(runId, (set = new Set()));
    set.add(resolveWait);
    let timer: NodeJS.Timeout | undefined;
    const stopped = () => resolveWait({ status: 'timeout' });
    if (stop?.aborted) stopped();
    else stop?.addEventListener('abort', stopped, { once: true });
    try {
      // A run in flight here needs no read: its end resolves the waiter registered above.
      let sessionKey = this.running.get(runId);
      if (sessionKey === undefined) {
        const ended = this.ended.get(runId);
        if (ended) return ended;
        const row = await this.o.store.getRun(runId);
        if (!row) throw new CrosstalkError('unknown_run', `no run ${runId}`);
        if (TERMINAL.has(row.status)) return { ...waitResultOf(row), ...(row.status !== 'ok' && row.merged_into ? { continuedIn: row.merged_into } : {}) };
        if (row.status === 'merged' && row.merged_into) return this.wait(row.merged_into, timeoutMs, stop);
        sessionKey = row.session_key;
      }
      const timeout = new Promise<WaitResult>((r) => (timer = setTimeout(() => r({ status: 'timeout' }), timeoutMs)));
      if (!this.cluster) return await Promise.race([done, timeout]);
      // Several processes: the run may end elsewhere. The event feed wakes us (remoteEnded; it reads the log only
      // while someone here waits for a run driven elsewhere); a slow poll backs it.
      const st = this.sessions.get(sessionKey);
      const elsewhere = !(st && (st.active?.id === runId || st.queue.some((q) => q.runId === runId)));
      if (elsewhere) this.remoteWaits++;
      // Driven here, its end answers the waiter; the slow poll only covers a run taken over by another process
      // meanwhile (this one paused past its lease). Driven elsewhere, the poll backs the event feed every second.
      const leave = this.pollRun(runId, elsewhere ? 1000 : 10_000);
      const began = Date.now();
      try {
        const r = await Promise.race([done, timeout]);
        const into = (r as Merged)[FOLLOW];
        return into ? await this.wait(into, Math.max(0, timeoutMs - (Date.now() - began)), stop) : r;
      } finally {
        leave();
        if (elsewhere) this.remoteWaits--;
      }
    } finally {
      clearTimeout(timer);
      stop?.removeEventListener('abort', stopped);
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

  private stopped: Promise<void> | null = null;

  /**
   * A graceful stop. No new work starts here (queued runs stay queued); runs that end within `graceMs` finish here;
   * the rest are stopped where they are and left for a re-drive (pending approvals stay pending). On PostgreSQL the
   * leases are then released and the others told, so they take the sessions over at once; on SQLite the next start
   * picks them up.
   */
  shutdown(o: { graceMs?: number } = {}): Promise<void> {
    if (this.stopped) return this.stopped;
    this.stopping = true;
    this.stopped = (async () => {
      // Runs waiting for an approval are handed over at once (and any that starts waiting during the grace).
      for (const runId of this.approvals.waiting) this.handOver(runId);
      await this.orphanSweep;
      const end = Date.now() + (o.graceMs ?? 0);
      while (this.live.size && Date.now() < end) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([Promise.allSettled([...this.live]), new Promise((r) => (timer = setTimeout(r, Math.max(0, end - Date.now()))))]);
        clearTimeout(timer);
      }
      for (const st of this.sessions.values()) st.active?.abort.abort(SHUTDOWN);
      await this.idle();
      const keys = [...this.sessions.keys()];
      this.sessions.clear();
      if (this.cluster) {
        for (const key of keys) await this.cluster.release(key).catch(() => undefined);
        await this.cluster.notify({ kind: 'orphans' }).catch(() => undefined);
      }
    })();
    return this.stopped;
  }

  /** The last step of a graceful stop: whoever still waits here for a run (it goes on elsewhere) is answered `timeout`. */
  endWaits(): void {
    for (const ws of this.waiters.values()) for (const w of ws) w({ status: 'timeout' });
  }
}
