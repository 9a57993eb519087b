// One subscriber of the event bus: a bounded live buffer fed by the bus's fan-out, or catching up from the event log
// when it is behind (a replay from a cursor, or a buffer that overflowed), with no gap and no duplicate.
import type { Store } from '../store/store';
import { type EventCursor, encodeEventCursor, isAfter } from './cursor';
import type { AgentEvent } from './types';

export interface EventFilter {
  sessionKey?: string;
  runId?: string;
}

const SUB_BUFFER = 2000;
/** A subscriber's buffer is bounded by bytes too: 2,000 messages of 256 KiB would pin 0.5 GB for one stalled tab. */
export const SUB_BUFFER_BYTES = 8 * 1024 * 1024;
const CATCHUP_PAGE = 500;

/** An event's size as its SSE line would carry it, measured once per event whatever the number of subscribers. */
const sizes = new WeakMap<AgentEvent, number>();
function sizeOf(ev: AgentEvent): number {
  let n = sizes.get(ev);
  if (n === undefined) {
    n = JSON.stringify(ev.data).length + 200; // the envelope (ids, stream, times, key) on top of the data
    sizes.set(ev, n);
  }
  return n;
}

/** What a subscription needs of its bus (./bus): how far the fan-out has gone, the log, and to be let go. */
export interface SubscriptionSource {
  readonly head: EventCursor;
  readonly store: Store;
  remove(sub: Subscription): void;
}

/** One subscriber's view: a bounded live buffer, or catching up from the log when behind. */
export class Subscription implements AsyncIterable<AgentEvent> {
  private queue: AgentEvent[] = [];
  /** What `queue` holds, in bytes (sizeOf). */
  private queuedBytes = 0;
  private wake: (() => void) | null = null;
  private closed = false;
  /** Position of the last event handed out or queued. */
  private last: EventCursor;
  /** Each queued event's position, and the last one handed out (where to resume reading the log after an overflow). */
  private cursors: EventCursor[] = [];
  private handedOut: EventCursor;
  /** While true, live events are not buffered; we read the log instead. */
  private catchingUp: boolean;
  private highestSeen: EventCursor | null = null;

  constructor(
    private readonly bus: SubscriptionSource,
    readonly filter: EventFilter,
    startAfter: EventCursor,
    replay: boolean,
  ) {
    this.last = startAfter;
    this.handedOut = startAfter;
    this.catchingUp = replay;
    // A replay must reach at least what was fanned out before it subscribed: those events will not be pushed again.
    if (replay && isAfter(bus.head, startAfter)) this.highestSeen = bus.head;
  }

  /** @internal called by the bus for matching events, in log order. */
  push(ev: AgentEvent, cursor: EventCursor) {
    if (this.closed || !isAfter(cursor, this.last)) return;
    if (this.catchingUp) {
      if (!this.highestSeen || isAfter(cursor, this.highestSeen)) this.highestSeen = cursor;
    } else if (this.queue.length >= SUB_BUFFER || (this.queue.length && this.queuedBytes + sizeOf(ev) > SUB_BUFFER_BYTES)) {
      // Too slow: drop the buffer and read the log from where this subscriber is.
      this.catchingUp = true;
      this.last = this.handedOut;
      this.queue = [];
      this.cursors = [];
      this.queuedBytes = 0;
      this.highestSeen = cursor;
    } else {
      this.queue.push(ev);
      this.queuedBytes += sizeOf(ev);
      this.cursors.push(cursor);
      this.last = cursor;
    }
    this.wake?.();
  }

  /** What the buffer holds now, in bytes (tests check the bound). */
  get bufferedBytes(): number {
    return this.queuedBytes;
  }

  close() {
    if (this.closed) return;
    this.closed = true;
    this.bus.remove(this);
    this.wake?.();
  }

  private async catchUp(): Promise<void> {
    for (;;) {
      if (this.last.tx === undefined && this.bus.store.dialect === 'postgres') this.last = await this.bus.store.resolveCursor(this.last);
      // Everything fanned out so far is in the log (settled when the feed read it): a short page means none of it is
      // left for us.
      const horizon = this.bus.head;
      const { rows, pending, cut } = await this.bus.store.eventsAfter({ after: this.last, ...this.filter, limit: CATCHUP_PAGE });
      if (this.closed) return;
      let taken = 0;
      for (const r of rows) {
        // Bytes bound the catch-up too: rows past the bound are read again once these are handed out.
        if (this.queue.length && this.queuedBytes + r.data.length + 200 > SUB_BUFFER_BYTES) break;
        const ev: AgentEvent = { id: r.id, runId: r.run_id, seq: r.seq, stream: r.stream as AgentEvent['stream'], ts: r.ts, sessionKey: r.session_key, data: JSON.parse(r.data), cursor: encodeEventCursor(r.cursor) };
        sizes.set(ev, r.data.length + 200);
        this.cursors.push(r.cursor);
        this.queue.push(ev);
        this.queuedBytes += sizeOf(ev);
        this.last = r.cursor;
        taken++;
      }
      if (taken < rows.length) return; // hand these out first, then continue from the first row left
      // A short page read every row up to `horizon` unless a row not settled yet cut it before: the horizon this read
      // went by can be below the one the feed went by (it dips: a transaction of another database the feed's read
      // left out, ended since, is one this read cannot place and waits for), and jumping to `horizon` then skipped the
      // fanned-out rows behind the cut. A cut past `horizon` (an older transaction still open) leaves none behind.
      if (rows.length < CATCHUP_PAGE && (!cut || isAfter(cut, horizon)) && isAfter(horizon, this.last)) this.last = horizon;
      // Every pushed event was already in the log, so once a short page leaves nothing newer seen, we are live
      // (rows not settled yet reach us through the live path: the feed delivers only settled rows, in order).
      if ((rows.length < CATCHUP_PAGE || pending) && (!this.highestSeen || !isAfter(this.highestSeen, this.last))) {
        this.catchingUp = false;
        return;
      }
      // Hand these out first, then continue (and while the horizon holds the rest back, hand out what was read).
      if (this.queue.length >= CATCHUP_PAGE || (pending && this.queue.length)) return;
      // Never spin: on SQLite a query resolves without yielding to the event loop.
      await new Promise((r) => setTimeout(r, pending && !rows.length ? 5 : 0));
    }
  }

  /**
   * Events already buffered behind the one `next` handed out, taken at once (up to `max`), so a writer sends a burst
   * in one write: never awaits, and never reads the log (a catch-up goes through `next`).
   */
  takeBuffered(max: number): AgentEvent[] {
    if (this.closed || !this.queue.length || max <= 0) return [];
    const n = Math.min(max, this.queue.length);
    const evs = this.queue.splice(0, n);
    const cursors = this.cursors.splice(0, n);
    this.handedOut = cursors[cursors.length - 1] ?? this.handedOut;
    if (!this.queue.length) this.queuedBytes = 0;
    else for (const ev of evs) this.queuedBytes = Math.max(0, this.queuedBytes - sizeOf(ev));
    return evs;
  }

  async next(signal?: AbortSignal): Promise<AgentEvent | null> {
    for (;;) {
      if (this.closed || signal?.aborted) return null;
      if (this.queue.length) {
        this.handedOut = this.cursors.shift() ?? this.handedOut;
        const ev = this.queue.shift()!;
        this.queuedBytes = this.queue.length ? Math.max(0, this.queuedBytes - sizeOf(ev)) : 0;
        return ev;
      }
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
