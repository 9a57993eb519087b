// The event bus: per-run seq, batched writes to the event log (ids come from the store), then fan-out.
// Slow subscribers never stall a run: their buffer is bounded, and on overflow they catch up from the log.
// On SQLite (one writer) subscribers are fed right after each write; on PostgreSQL the cluster's feed reads
// the log in (transaction, id) order and fans out, so events of every process arrive in one order.
import type { Logger } from 'pino';
import { envNumber } from '../env-number.mjs';
import { isConflict, isConnectionLoss } from '../store/pg-errors';
import type { Store } from '../store/store';
import { type EventCursor, encodeEventCursor, isAfter } from './cursor';
import type { AgentEvent, EventStream, PendingEvent } from './types';
import { type EventFilter, Subscription } from './subscription';

export { SUB_BUFFER_BYTES, Subscription, type EventFilter } from './subscription';

type Listener = (ev: AgentEvent) => void;

/** A run's events kept (for its end's fold) up to this many; past it, its log is read back to fold it. */
const KEEP_PER_RUN = 2000;
/** PostgreSQL: how long an event may wait for others to share its write. */
const FLUSH_MS = 5;

interface RunContext {
  sessionKey: string;
  seq: number;
  /** Driven here under its session's lease (clustered): its events are written only under a fence (`emit`). */
  leased?: boolean;
  /** Text deltas emitted since the flush numbered `burstAt` (`emit` coalesces a long burst). */
  burst?: number;
  burstAt?: number;
}

/**
 * Past this many text deltas of one run waiting for one flush, the next ones are added to the last (one event carries
 * the rest of the burst's text). A provider's chunks that arrive together, or a long scripted reply, were one event
 * each, and every stream reader got each in a write of its own: 40,000 deltas to 20 readers held the loop for
 * seconds. A model that streams at its own pace has a delta or a few per flush and is never coalesced.
 */
const COALESCE_AFTER = 64;
const isPlainDelta = (data: Record<string, unknown>) => typeof data.delta === 'string' && Object.keys(data).length === 1;

/**
 * The epoch an event of a leased run carries when this process holds no fence for its session (its state was
 * dropped while the run went on): no session has it, so the store's fence check drops the event (never unchecked).
 */
export const NO_FENCE = -1;

export class EventBus {
  private pending: PendingEvent[] = [];
  /** The batch being written (or tried again) now. */
  private writing: PendingEvent[] | null = null;
  private flushing: Promise<void> | null = null;
  private scheduled = false;
  private runs = new Map<string, RunContext>();
  /** Batches taken by `flush` so far: a run's burst of deltas is counted per batch. */
  private flushes = 0;
  /** Each run's events logged so far, from its first (seq 1; null: not known whole), for its end to fold (`loggedOf`). */
  private written = new Map<string, { events: PendingEvent[]; ids: Array<{ id: number; tx?: string }> } | null>();
  private listeners = new Set<Listener>();
  private bySession = new Map<string, Set<Subscription>>();
  private byRun = new Map<string, Set<Subscription>>();
  private everything = new Set<Subscription>();
  /** The log position fanned out so far: a live subscriber starts after it. */
  head: EventCursor = { id: 0 };
  /** PostgreSQL: set by the cluster feed, which does the fan-out; told after each write (the log grew). */
  feed: { written(): void } | null = null;

  constructor(
    readonly store: Store,
    private readonly log: Logger,
  ) {}

  /**
   * Registers a run so its events get the session key and a per-run seq (continuing `lastSeq`). Registered already
   * (an approval's decision emitted here earlier, a copy still ending): its seq never goes back, and moves up to
   * `lastSeq` when the log is further on (another process drove the run meanwhile), so a re-drive continues the log.
   * `leased`: the run is driven here under its session's lease (clustered), so its events need a fence (`emit`).
   */
  registerRun(runId: string, sessionKey: string, lastSeq = 0, o: { leased?: boolean } = {}): void {
    if (this.retrying) {
      // The log lags behind while a batch is tried again: its seqs (and those queued behind it) are taken, unless the
      // fence is sure to drop them (a gap in the log, CONTRACT §4: the re-drive continues from the log's seq then).
      for (const e of this.retrying) if (e.runId === runId && e.seq > lastSeq && !this.doomed(e)) lastSeq = e.seq;
      for (const e of this.pending) if (e.runId === runId && e.seq > lastSeq && !this.doomed(e)) lastSeq = e.seq;
    }
    const ctx = this.runs.get(runId);
    if (!ctx) {
      this.runs.set(runId, { sessionKey, seq: lastSeq, ...(o.leased ? { leased: true } : {}) });
      this.written.set(runId, lastSeq === 0 ? { events: [], ids: [] } : null);
    } else {
      if (lastSeq > ctx.seq) {
        ctx.seq = lastSeq;
        this.written.set(runId, null);
      }
      if (o.leased) ctx.leased = true;
    }
  }

  /** An event the fence is sure to refuse: under `NO_FENCE`, or an epoch older than this process's fence on its session now
   * (claimed again, e.g. declared dead in a PostgreSQL restart; epochs never repeat). A re-drive may reuse its seq. */
  private doomed(e: PendingEvent): boolean {
    if (e.epoch === undefined) return false;
    if (e.epoch === NO_FENCE) return true;
    const fence = this.store.fenceOf(e.sessionKey);
    return fence !== undefined && fence !== e.epoch;
  }

  /**
   * An event of a run this process does not drive (ended, or elsewhere): emitted on it when it is registered here,
   * else registered for this one event after the `lastSeq` its log reached (the caller reads it: `Store.maxSeq`).
   */
  async emitOnLog(runId: string, sessionKey: string, stream: EventStream, data: Record<string, unknown>, lastSeq: () => Promise<number>): Promise<void> {
    if (this.runs.has(runId)) return void this.emit(runId, stream, data);
    this.registerRun(runId, sessionKey, await lastSeq());
    this.emit(runId, stream, data);
    this.unregisterRun(runId);
  }

  /** Whether the run is registered here (its events can be emitted). */
  has(runId: string): boolean {
    return this.runs.has(runId);
  }

  /** The session of a run this process drives under its lease (clustered); undefined for any other run id. */
  leasedSession(runId: string): string | undefined {
    const ctx = this.runs.get(runId);
    return ctx?.leased ? ctx.sessionKey : undefined;
  }

  /**
   * The events of a registered run logged so far with their log ids, when they are all of its log from its first
   * event (registered at seq 0, at most KEEP_PER_RUN): its end writes the rest and folds the whole (server/store/event-fold.ts).
   */
  loggedOf(runId: string): { events: PendingEvent[]; ids: Array<{ id: number; tx?: string }> } | null {
    const w = this.written.get(runId);
    return w ? { events: [...w.events], ids: [...w.ids] } : null; // a copy: the end's own events are added to the kept ones as it is logged
  }

  unregisterRun(runId: string): number {
    const ctx = this.runs.get(runId);
    this.runs.delete(runId);
    this.written.delete(runId);
    if (ctx) for (const fn of this.goneListeners) {
      try {
        fn(runId);
      } catch (e) {
        this.log.error({ err: e, runId }, 'run-gone listener failed');
      }
    }
    return ctx?.seq ?? 0;
  }

  /**
   * Called when a run stops being driven by this process, whether its end event was written here or not (a run
   * fenced off after another process took its session over, one dropped at a stop): in-memory state kept per run
   * (reply routing, delivered texts) is freed on this, not only on an end event this process may never see.
   */
  onRunGone(fn: (runId: string) => void): () => void {
    this.goneListeners.add(fn);
    return () => this.goneListeners.delete(fn);
  }
  private goneListeners = new Set<(runId: string) => void>();

  currentSeq(runId: string): number {
    return this.runs.get(runId)?.seq ?? 0;
  }

  /** Queues an event of a registered run; it is written and fanned out on the next flush. */
  emit(runId: string, stream: EventStream, data: Record<string, unknown>): PendingEvent {
    const ctx = this.runs.get(runId);
    if (!ctx) throw new Error(`emit for unregistered run ${runId}`);
    if (stream === 'assistant' && isPlainDelta(data)) {
      if (ctx.burstAt !== this.flushes) {
        ctx.burstAt = this.flushes;
        ctx.burst = 0;
      }
      ctx.burst = (ctx.burst ?? 0) + 1;
      const last = this.pending[this.pending.length - 1];
      if (ctx.burst > COALESCE_AFTER && last && last.runId === runId && last.stream === 'assistant' && isPlainDelta(last.data)) {
        last.data.delta = (last.data.delta as string) + (data.delta as string);
        return last;
      }
    }
    ctx.seq += 1;
    const ev: PendingEvent = { runId, seq: ctx.seq, stream, ts: new Date().toISOString(), sessionKey: ctx.sessionKey, data };
    const epoch = this.feed ? (this.store.fenceOf(ctx.sessionKey) ?? (ctx.leased ? NO_FENCE : undefined)) : undefined;
    if (epoch !== undefined) ev.epoch = epoch;
    this.pending.push(ev);
    this.schedule();
    return ev;
  }

  /** An event with its seq, to be written by the caller with a write of its own (`Store.finishRun`), then `logged`. */
  prepare(runId: string, stream: EventStream, data: Record<string, unknown>): PendingEvent {
    const ctx = this.runs.get(runId);
    if (!ctx) throw new Error(`emit for unregistered run ${runId}`);
    ctx.seq += 1;
    return { runId, seq: ctx.seq, stream, ts: new Date().toISOString(), sessionKey: ctx.sessionKey, data };
  }

  /**
   * Takes a run's events still waiting for a flush out of the queue, for the caller to write with its own write
   * (`Store.finishRun`) ahead of the ones it prepares: after any flush in flight, so seq order stays log order.
   */
  async takeRun(runId: string): Promise<PendingEvent[]> {
    while (this.flushing) await this.flushing;
    if (!this.pending.some((e) => e.runId === runId)) return [];
    const mine = this.pending.filter((e) => e.runId === runId);
    this.pending = this.pending.filter((e) => e.runId !== runId);
    return mine;
  }

  /**
   * Hands on events that the caller wrote in a transaction of its own (`Store.finishRun`), once it has
   * committed: listeners, and subscribers (on PostgreSQL through the feed, which reads them back in log order).
   */
  logged(events: PendingEvent[], ids: Array<{ id: number; tx?: string }>): void {
    for (let i = 0; i < events.length; i++) {
      const w = ids[i];
      if (!w) continue;
      const e = events[i]!;
      const cursor: EventCursor = w.tx === undefined ? { id: w.id } : { id: w.id, tx: BigInt(w.tx) };
      const kept = this.written.get(e.runId);
      if (kept) {
        if (kept.events.length >= KEEP_PER_RUN) this.written.set(e.runId, null);
        else {
          kept.events.push(e);
          kept.ids.push(w);
        }
      }
      // The event without its fence (`epoch`), in one object (the keys in the order emit and prepare give them).
      const ev: AgentEvent = { id: w.id, runId: e.runId, seq: e.seq, stream: e.stream, ts: e.ts, sessionKey: e.sessionKey, data: e.data, cursor: encodeEventCursor(cursor) };
      this.notifyListeners(ev);
      if (!this.feed) this.fanOut(ev, cursor);
    }
    this.feed?.written();
  }

  /** In-process listener (metrics, waiters); its errors are isolated from the others. */
  onEvent(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Resolves when everything emitted so far is written and fanned out. */
  async drain(): Promise<void> {
    while (this.pending.length || this.flushing) {
      if (this.flushing) await this.flushing;
      else await this.flush();
    }
  }

  /**
   * Resolves once none of a run's events waits here for a write or is being written (or tried again): what the log
   * holds of the run is then all it will hold from this process. A re-drive reads the log after it (run-log-gaps.ts).
   */
  async settledRun(runId: string): Promise<void> {
    const has = (batch: PendingEvent[] | null) => !!batch && batch.some((e) => e.runId === runId);
    while (has(this.pending) || has(this.writing)) await (this.flushing ?? this.flush());
  }

  /**
   * Writes are batched: on SQLite the next turn of the event loop; on PostgreSQL (a round trip per write, and a
   * wake-up for every process) after FLUSH_MS, so a quick run's events go out with its end in one transaction.
   */
  private schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    const go = () => {
      this.scheduled = false;
      void this.flush();
    };
    if (this.feed) setTimeout(go, FLUSH_MS);
    else setImmediate(go);
  }

  private flush(): Promise<void> {
    if (this.flushing) {
      // One writer at a time keeps ids and fan-out in order; the running flush picks the rest up.
      return this.flushing;
    }
    if (!this.pending.length) return Promise.resolve();
    const run = async () => {
      while (this.pending.length) {
        const batch = this.pending;
        this.pending = [];
        this.flushes++;
        this.writing = batch;
        let ids: Array<{ id: number; tx?: string } | null> | null;
        try {
          ids = await this.write(batch, false);
        } catch (e) {
          // Later batches wait behind this one (they stay in `pending`): the log keeps each run's seq order.
          ids = await this.writeAgain(batch, e);
          if (!ids) continue;
        } finally {
          this.writing = null;
        }
        const fenced = ids.filter((x) => x === null).length;
        if (fenced) this.log.warn({ count: fenced }, 'events of a session taken over by another process were not written (fenced)');
      }
    };
    this.flushing = run().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  /** Writes a batch, handed on by the store as soon as it is written, in log order (a null id: fenced, this process lost the session). */
  private write(batch: PendingEvent[], again: boolean) {
    return this.store.insertEvents(batch, { notify: !!this.feed, again, logged: (ids) => this.logged(batch, ids as Array<{ id: number; tx?: string }>) });
  }

  /** How long a batch cut off by a lost PostgreSQL connection (or a lock conflict) is tried again before it is dropped. */
  retryForMs = envNumber('CROSSTALK_EVENT_RETRY_MS');
  /** The batch being tried again, if any: a run registered anew meanwhile continues after its seqs. */
  private retrying: PendingEvent[] | null = null;

  /**
   * A batch whose write failed. Cut off by a lost PostgreSQL connection (a restart, a failover, pg_terminate_backend;
   * server/store/pg-errors.ts), or rolled back by a lock conflict (deadlock detected, a serialization failure), it is
   * tried again with backoff until it goes through, for `retryForMs` at most; the retry skips rows the first attempt
   * did commit (the reply, not the COMMIT, may be what was lost).
   * Any other failure (a bad row), SQLite, or the time up: dropped from the log, as logged (null).
   */
  private async writeAgain(batch: PendingEvent[], err: unknown): Promise<Array<{ id: number; tx?: string } | null> | null> {
    const until = Date.now() + this.retryForMs;
    let tries = 0;
    this.retrying = batch;
    try {
      for (let wait = 50; this.store.dialect === 'postgres' && (isConnectionLoss(err) || isConflict(err)) && Date.now() < until; wait = Math.min(wait * 2, 2000)) {
        if (!tries++) this.log.warn({ err: (err as Error).message, count: batch.length }, isConflict(err) ? 'event log write lost a lock conflict (deadlock or serialization failure); trying again' : 'event log write cut off (database connection lost); trying again');
        await new Promise((r) => setTimeout(r, Math.min(wait, Math.max(0, until - Date.now()))));
        try {
          return await this.write(batch, true);
        } catch (e) {
          err = e;
        }
      }
    } finally {
      this.retrying = null;
    }
    this.log.error({ err, count: batch.length, tries }, 'event log write failed; events dropped from the log');
    return null;
  }

  private notifyListeners(ev: AgentEvent) {
    for (const fn of this.listeners) {
      try {
        fn(ev);
      } catch (e) {
        this.log.error({ err: e, stream: ev.stream }, 'event listener failed');
      }
    }
  }

  /** Hands one logged event to the subscribers whose filter it matches, in log order. */
  fanOut(ev: AgentEvent, cursor: EventCursor) {
    if (isAfter(cursor, this.head)) this.head = cursor;
    for (const s of this.everything) s.push(ev, cursor);
    const bs = this.bySession.get(ev.sessionKey);
    if (bs) for (const s of bs) s.push(ev, cursor);
    const br = this.byRun.get(ev.runId);
    if (br) for (const s of br) s.push(ev, cursor);
  }

  get subscriberCount(): number {
    return this.everything.size + this.bySession.size + this.byRun.size;
  }

  /**
   * Where a live reader starts, as of now: on PostgreSQL the log's settled horizon when the feed's position (`head`)
   * is behind it (with no subscriber the feed only moves it every 100 ms or so, and a live stream opened right after
   * a run ended replayed that run: CONTRACT §3, "without Last-Event-ID the stream starts live"). Undefined: start at
   * `head` (SQLite, where subscribers are fed at each write, or a feed already there). Given to `subscribe` as
   * `liveFrom`.
   */
  async liveStart(): Promise<EventCursor | undefined> {
    if (!this.feed) return undefined;
    const horizon = await this.store.settledHorizon();
    return isAfter(horizon, this.head) ? horizon : undefined;
  }

  /**
   * Subscribes now (synchronously), so nothing emitted after this call is missed.
   * With `after` the subscription first replays the log after that cursor, with no gap and no duplicate.
   */
  subscribe(filter: EventFilter, after?: EventCursor, liveFrom?: EventCursor): Subscription {
    // Live (no `after`): from `head`, or from `liveFrom` (`liveStart()`) when given: events at or before it that the
    // feed fans out later are skipped, the rest come in log order as they are fanned out (no read of the log).
    const sub = new Subscription(this, filter, after ?? liveFrom ?? this.head, after !== undefined);
    const add = (m: Map<string, Set<Subscription>>, k: string) => {
      let set = m.get(k);
      if (!set) m.set(k, (set = new Set()));
      set.add(sub);
    };
    if (filter.runId) add(this.byRun, filter.runId);
    else if (filter.sessionKey) add(this.bySession, filter.sessionKey);
    else this.everything.add(sub);
    return sub;
  }

  /** @internal */
  remove(sub: Subscription) {
    this.everything.delete(sub);
    const f = sub.filter;
    const m = f.runId ? this.byRun : f.sessionKey ? this.bySession : null;
    const k = f.runId ?? f.sessionKey;
    if (m && k) {
      const set = m.get(k);
      set?.delete(sub);
      if (set && !set.size) m.delete(k);
    }
  }
}
