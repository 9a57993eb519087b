// The event feed on PostgreSQL: one reader per process tails the event log in (transaction, id) order and
// fans each settled row out to this process's subscribers. Woken by local writes and by the other processes'
// NOTIFY; a poll every second covers a lost notification or a reconnect.
import type { EventBus } from '../events/bus';
import { type EventCursor, encodeEventCursor, isAfter } from '../events/cursor';
import type { AgentEvent } from '../events/types';
import type { Logger } from '../logger';
import type { Store } from '../store/store';

const PAGE = 500;
const IDLE_MS = 100;

export class EventFeed {
  private pos: EventCursor = { id: 0, tx: 0n };
  private running = false;
  private again = false;
  private retry: NodeJS.Timeout | null = null;
  private poll: NodeJS.Timeout | null = null;
  private stopped = false;
  /** Every event read, for this process's cross-process waiters (a run that ended elsewhere). */
  onEvent: ((ev: AgentEvent) => void) | null = null;
  /**
   * Whether anyone here wants events (subscribers, waiters for runs elsewhere). When no one does, the feed does
   * not read rows: it only moves its position to the settled horizon, at most every IDLE_MS, so a subscriber
   * that arrives later starts (nearly) live.
   */
  interest: () => boolean = () => true;
  private idleAt = 0;

  constructor(
    private readonly store: Store,
    private readonly bus: EventBus,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    this.pos = await this.store.logHead();
    this.bus.head = this.pos;
    this.poll = setInterval(() => this.wake(), 1000);
    this.poll.unref();
  }

  stop() {
    this.stopped = true;
    if (this.poll) clearInterval(this.poll);
    if (this.retry) clearTimeout(this.retry);
  }

  wake = (): void => {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    void this.run();
  };

  private later(ms: number) {
    if (this.retry || this.stopped) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.wake();
    }, ms);
  }

  private async run() {
    this.running = true;
    try {
      if (!this.interest()) {
        const now = performance.now();
        if (now - this.idleAt >= IDLE_MS) {
          this.idleAt = now;
          const horizon = await this.store.settledHorizon();
          // A reader came while the horizon was read: it went live at the feed's position and waits for the rows
          // after it, which a jump to the horizon would never fan out (rows committed meanwhile were lost to it).
          if (this.interest()) this.later(1);
          else if (isAfter(horizon, this.pos)) {
            this.pos = horizon;
            if (isAfter(horizon, this.bus.head)) this.bus.head = horizon;
          }
        } else this.later(IDLE_MS);
        return;
      }
      do {
        this.again = false;
        for (;;) {
          const { rows, pending } = await this.store.eventsAfter({ after: this.pos, limit: PAGE });
          for (const r of rows) {
            const ev: AgentEvent = { id: r.id, runId: r.run_id, seq: r.seq, stream: r.stream as AgentEvent['stream'], ts: r.ts, sessionKey: r.session_key, data: JSON.parse(r.data), cursor: encodeEventCursor(r.cursor) };
            this.pos = r.cursor;
            this.bus.fanOut(ev, r.cursor);
            this.onEvent?.(ev);
          }
          // Rows of a transaction that is not settled yet (an older one still open): look again shortly.
          if (pending) this.later(rows.length ? 1 : 3);
          if (rows.length < PAGE) break;
        }
      } while (this.again);
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'event feed read failed; retrying');
      this.later(200);
    } finally {
      this.running = false;
    }
  }
}
