// The event bus: per-run seq, batched writes to the event log (ids come from the store), then fan-out.
// Slow subscribers never stall a run: their buffer is bounded, and on overflow they catch up from the log by id.
import type { Logger } from 'pino';
import type { Store } from '../store/store';
import type { AgentEvent, EventStream, PendingEvent } from './types';

export interface EventFilter {
  sessionKey?: string;
  runId?: string;
}

type Listener = (ev: AgentEvent) => void;

const SUB_BUFFER = 2000;
const CATCHUP_PAGE = 500;

interface RunContext {
  sessionKey: string;
  seq: number;
}

export class EventBus {
  private pending: PendingEvent[] = [];
  private flushing: Promise<void> | null = null;
  private scheduled = false;
  private runs = new Map<string, RunContext>();
  private listeners = new Set<Listener>();
  private bySession = new Map<string, Set<Subscription>>();
  private byRun = new Map<string, Set<Subscription>>();
  private everything = new Set<Subscription>();
  /** Highest id fanned out so far. */
  lastId = 0;

  constructor(
    readonly store: Store,
    private readonly log: Logger,
  ) {}

  /** Registers a run so its events get the session key and a per-run seq (continuing `lastSeq`). */
  registerRun(runId: string, sessionKey: string, lastSeq = 0): void {
    if (!this.runs.has(runId)) this.runs.set(runId, { sessionKey, seq: lastSeq });
  }

  unregisterRun(runId: string): number {
    const ctx = this.runs.get(runId);
    this.runs.delete(runId);
    return ctx?.seq ?? 0;
  }

  currentSeq(runId: string): number {
    return this.runs.get(runId)?.seq ?? 0;
  }

  /** Queues an event of a registered run; it is written and fanned out on the next flush. */
  emit(runId: string, stream: EventStream, data: Record<string, unknown>): PendingEvent {
    const ctx = this.runs.get(runId);
    if (!ctx) throw new Error(`emit for unregistered run ${runId}`);
    ctx.seq += 1;
    const ev: PendingEvent = { runId, seq: ctx.seq, stream, ts: new Date().toISOString(), sessionKey: ctx.sessionKey, data };
    this.pending.push(ev);
    this.schedule();
    return ev;
  }

  /** In-process listener (metrics, waiters); its errors are isolated from the others. */
  onEvent(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Resolves when everything emitted so far is written and fanned out. */
  async drain(): Promise<void> {
    while (this.pending.length || this.flushing || this.scheduled) {
      if (this.flushing) await this.flushing;
      else if (!this.pending.length) await new Promise((r) => setImmediate(r)); // let the scheduled flush run
      else await this.flush();
    }
  }

  private schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
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
        let ids: number[];
        try {
          ids = await this.store.insertEvents(batch);
        } catch (e) {
          this.log.error({ err: e, count: batch.length }, 'event log write failed; events dropped from the log');
          continue;
        }
        for (let i = 0; i < batch.length; i++) this.deliver({ id: ids[i]!, ...batch[i]! });
      }
    };
    this.flushing = run().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  private deliver(ev: AgentEvent) {
    if (ev.id > this.lastId) this.lastId = ev.id;
    for (const fn of this.listeners) {
      try {
        fn(ev);
      } catch (e) {
        this.log.error({ err: e, stream: ev.stream }, 'event listener failed');
      }
    }
    for (const s of this.everything) s.push(ev);
    const bs = this.bySession.get(ev.sessionKey);
    if (bs) for (const s of bs) s.push(ev);
    const br = this.byRun.get(ev.runId);
    if (br) for (const s of br) s.push(ev);
  }

  /**
   * Subscribes now (synchronously), so nothing emitted after this call is missed.
   * With `afterId` the subscription first replays the log after that id, with no gap and no duplicate.
   */
  subscribe(filter: EventFilter, afterId?: number): Subscription {
    const sub = new Subscription(this, filter, afterId ?? this.lastId, afterId !== undefined);
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

/** One subscriber's view: a bounded live buffer, or catching up from the log when behind. */
export class Subscription implements AsyncIterable<AgentEvent> {
  private queue: AgentEvent[] = [];
  private wake: (() => void) | null = null;
  private closed = false;
  /** Highest id handed out or queued. */
  private lastId: number;
  /** While true, live events are not buffered; we read the log instead. */
  private catchingUp: boolean;
  private highestSeen = 0;

  constructor(
    private readonly bus: EventBus,
    readonly filter: EventFilter,
    startAfter: number,
    replay: boolean,
  ) {
    this.lastId = startAfter;
    this.catchingUp = replay;
  }

  /** @internal called by the bus for matching events, in id order. */
  push(ev: AgentEvent) {
    if (this.closed || ev.id <= this.lastId) return;
    if (this.catchingUp) {
      if (ev.id > this.highestSeen) this.highestSeen = ev.id;
    } else if (this.queue.length >= SUB_BUFFER) {
      // Too slow: drop the buffer and read the log from where this subscriber is.
      this.catchingUp = true;
      this.lastId = this.queue.length ? this.queue[0]!.id - 1 : this.lastId;
      this.queue = [];
      this.highestSeen = ev.id;
    } else {
      this.queue.push(ev);
      this.lastId = ev.id;
    }
    this.wake?.();
  }

  close() {
    if (this.closed) return;
    this.closed = true;
    this.bus.remove(this);
    this.wake?.();
  }

  private async catchUp(): Promise<void> {
    for (;;) {
      const rows = await this.bus.store.eventsAfter({ afterId: this.lastId, ...this.filter, limit: CATCHUP_PAGE });
      if (this.closed) return;
      for (const r of rows) {
        this.queue.push({ id: r.id, runId: r.run_id, seq: r.seq, stream: r.stream as AgentEvent['stream'], ts: r.ts, sessionKey: r.session_key, data: JSON.parse(r.data) });
        this.lastId = r.id;
      }
      // Every pushed event was already in the log, so once a short page leaves nothing newer seen, we are live.
      if (rows.length < CATCHUP_PAGE && this.highestSeen <= this.lastId) {
        this.catchingUp = false;
        return;
      }
      if (this.queue.length >= CATCHUP_PAGE) return; // hand these out first, then continue
    }
  }

  async next(signal?: AbortSignal): Promise<AgentEvent | null> {
    for (;;) {
      if (this.closed || signal?.aborted) return null;
      if (this.queue.length) return this.queue.shift()!;
      if (this.catchingUp) {
        await this.catchUp();
        continue;
      }
      await new Promise<void>((resolve) => {
        const onAbort = () => resolve();
        this.wake = () => {
          signal?.removeEventListener('abort', onAbort); // one listener per wait, not one per event ever delivered
          resolve();
        };
        signal?.addEventListener('abort', onAbort, { once: true });
      });
      this.wake = null;
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<AgentEvent> {
    try {
      for (;;) {
        const ev = await this.next();
        if (!ev) return;
        yield ev;
      }
    } finally {
      this.close();
    }
  }
}
