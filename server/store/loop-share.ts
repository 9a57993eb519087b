// The SQLite connection shared fairly with the event loop: once the store's work in one turn of the loop has run past
// a budget, the next hand-over of the connection waits for a later turn, whose budget the waiters then share in order
// (issue 24 item 2).
import { SqliteDialect, type DatabaseConnection, type Driver } from 'kysely';

/**
 * Why: better-sqlite3 is synchronous and Kysely hands its one connection to the next waiter in a promise continuation,
 * so when several runs' writes settle together (50 runs streaming, their ends and event batches) they all ran in one
 * macrotask: tasks of 40–60 ms of short transactions, each under 3 ms (bench/profile-loop.ts --stream, 100,000
 * sessions), and every stream, page and request waited behind them. A waiter released here resumes in a turn of its own
 * (two setImmediate hops: the first may still fall in the turn that queued it), after timers and I/O had theirs, and
 * those behind it follow while that turn's budget lasts.
 */
export class LoopShare {
  /** performance.now() of this turn's first hand-over; -1 when the store has not run in this turn yet. */
  private sliceStart = -1;
  /** Which slice is current: a stale slice's end does not end the one a released waiter began. */
  private slice = 0;
  private readonly waiting: Array<() => void> = [];
  private releasing = false;

  constructor(readonly budgetMs: number) {}

  /** Undefined when the caller may take the connection now; else a promise that resolves when its turn comes. */
  turn(): Promise<void> | undefined {
    const now = performance.now();
    if (this.waiting.length === 0 && this.within(now)) return undefined;
    return new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.releaseLater();
    });
  }

  /**
   * The connection was let go: the next waiter takes it in this turn while the turn's budget lasts, else in a later
   * turn. So a turn runs as many transactions as fit in the budget, not one.
   */
  done(): void {
    if (this.waiting.length === 0) return;
    if (this.within(performance.now())) this.waiting.shift()!();
    else this.releaseLater();
  }

  /** Callers waiting for a later turn (tests, metrics). */
  get queued(): number {
    return this.waiting.length;
  }

  /** Whether the store may go on in this turn (a turn's first hand-over begins its slice). */
  private within(now: number): boolean {
    if (this.sliceStart < 0) this.begin(now);
    return now - this.sliceStart < this.budgetMs;
  }

  /**
   * A slice ends when the loop has gone round: two setImmediate hops, so a check phase of immediates run back to back
   * (the bus's flushes, released waiters) stays one slice, as it is one gap for the loop's timers.
   */
  private begin(now: number) {
    this.sliceStart = now;
    const slice = ++this.slice;
    setImmediate(() =>
      setImmediate(() => {
        if (this.slice === slice) this.sliceStart = -1;
      }),
    );
  }

  private releaseLater() {
    if (this.releasing) return;
    this.releasing = true;
    setImmediate(() =>
      setImmediate(() => {
        this.releasing = false;
        const next = this.waiting.shift();
        if (!next) return;
        this.begin(performance.now());
        next(); // the ones after it follow through done(), while this turn's budget lasts
      }),
    );
  }
}

/** Kysely's SQLite dialect whose connection hand-overs take turns with the event loop (LoopShare). */
export class LoopSharingSqliteDialect extends SqliteDialect {
  constructor(
    config: ConstructorParameters<typeof SqliteDialect>[0],
    private readonly share: LoopShare,
  ) {
    super(config);
  }

  override createDriver(): Driver {
    const driver = super.createDriver();
    const share = this.share;
    const acquire = driver.acquireConnection.bind(driver);
    const release = driver.releaseConnection.bind(driver);
    driver.acquireConnection = async (): Promise<DatabaseConnection> => {
      const wait = share.turn();
      if (wait) await wait;
      return acquire();
    };
    driver.releaseConnection = async (connection: DatabaseConnection): Promise<void> => {
      await release(connection);
      share.done();
    };
    return driver;
  }
}
