// SQLite's full-text index (messages_fts, and search_terms through search_terms_pending) written in batches behind the
// turns, instead of by a trigger inside every transaction that inserts a message; caught up before every search.
import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import type { Database } from './schema';
import { sqliteBody } from './search-sqlite';

/**
 * How often new messages are looked for. Why batches (issue 24.4): FTS5 writes a new index segment at every commit
 * that inserted a row, so a turn's two commits each wrote the index's pages as well (and counted a pending term row).
 * Two built servers side by side, interleaved, this against the insert triggers: a round of 50 new sessions 55.7 / 65.0
 * against 77.4 / 70.4 ms, a sequential turn 1.27 / 1.40 against 1.53 / 1.55 ms (BENCHMARKS.md).
 */
export const INDEX_EVERY_MS = 200;
/** Messages indexed per transaction. */
export const INDEX_BATCH = 256;
/** A tick indexes batches for this long at most, then yields the event loop and goes on right after (a backlog). */
export const TICK_BUDGET_MS = 8;
/**
 * Pages of FTS5 segment merging per step. FTS5's own merging (`automerge`) runs inside whichever write flushed a new
 * segment, 64 pages per level of the index at once: at 10,000,000 messages a batch's insert then took 20–120 ms about
 * every 16th batch, in one piece on the gateway's loop (issue 24.2; BENCHMARKS.md "Stop 44"). Migration 0028 turns it
 * off; the indexer owes a step of this many pages for every MERGE_EVERY messages it indexes (about FTS5's own rate:
 * a chat message's words fill ~1/8 of a leaf page, times ~9 levels) and pays them in its ticks, the event loop
 * served between. A step finds nothing to do unless a level has 4 segments (`usermerge`) or a merge is under way;
 * FTS5 still merges a whole level at once if one reaches 16 (`crisismerge`), which these steps keep it from.
 */
export const MERGE_PAGES = 32;
/** Messages indexed per merge step owed. */
export const MERGE_EVERY = 32;

export class SqliteSearchIndexer {
  private timer?: NodeJS.Timeout;
  private closed = false;
  private ticking = false;
  private readonly next: BetterSqlite3.Statement;
  private readonly write: (from: number, to: number) => number;
  /** Merge steps owed for the messages indexed so far. */
  private mergesOwed = 0;
  private readonly merge: BetterSqlite3.Statement;
  private readonly changes: BetterSqlite3.Statement;
  /** The newest message id this indexer put in the index (tests). */
  lastIndexed = 0;

  constructor(
    raw: BetterSqlite3.Database,
    private readonly db: Kysely<Database>,
    private readonly opts: { everyMs?: number; batch?: number; budgetMs?: number } = {},
  ) {
    // The next batch: the newest id indexed, and the last of the (at most `batch`) messages after it (null: none).
    this.next = raw.prepare('select upto, (select max(id) from (select id from messages where id > upto order by id limit ?)) as last from search_indexed');
    // OR REPLACE: a message changed before it was indexed was indexed by the update trigger already.
    const index = raw.prepare(`insert or replace into messages_fts(rowid, body) select m.id, ${sqliteBody('m')} from messages m where m.id > ? and m.id <= ?`);
    const terms = raw.prepare('insert or ignore into search_terms_pending(id) select id from messages where id > ? and id <= ?');
    const mark = raw.prepare('update search_indexed set upto = ?');
    this.write = raw.transaction((from: number, to: number) => {
      const { changes } = index.run(from, to);
      terms.run(from, to);
      mark.run(to);
      return changes;
    });
    // A positive page count merges only a level with `usermerge` (4) or more segments, or one already being merged.
    this.merge = raw.prepare(`insert into messages_fts(messages_fts, rank) values ('merge', ?)`);
    this.changes = raw.prepare('select total_changes()').pluck();
  }

  /** Starts looking for new messages every INDEX_EVERY_MS (unref'd: it keeps no process alive). */
  start(): this {
    if (!this.timer && !this.closed) {
      this.timer = setInterval(() => void this.tick(), this.opts.everyMs ?? INDEX_EVERY_MS);
      this.timer.unref();
    }
    return this;
  }

  /** Every message written so far is in the index once this resolves (sessions.search calls it first). */
  catchUp(): Promise<void> {
    return this.locked(() => {
      while (this.step()) {
        /* until nothing is left */
      }
    });
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * The timer's work: batches while messages wait, then the merge steps owed, for TICK_BUDGET_MS at most; the rest
   * right after, the event loop served between. Resolves when this tick's part is done (tests call it directly).
   */
  tick(): Promise<void> | undefined {
    if (this.closed || this.ticking) return;
    this.ticking = true;
    let more = false;
    return this.locked(() => {
      const until = performance.now() + (this.opts.budgetMs ?? TICK_BUDGET_MS);
      do more = this.step() || this.payMerge();
      while (more && performance.now() < until);
    })
      .catch(() => undefined) // a failed batch is tried again next tick
      .finally(() => {
        this.ticking = false;
        if (more) setImmediate(() => void this.tick());
      });
  }

  /** Indexes one batch (a transaction of its own); whether there was one. Nothing waiting: one read, no transaction. */
  private step(): boolean {
    const { upto, last } = this.next.get(this.opts.batch ?? INDEX_BATCH) as { upto: number; last: number | null };
    if (last == null) return false;
    const n = this.write(upto, last);
    this.lastIndexed = last;
    this.mergesOwed += Math.ceil(n / MERGE_EVERY);
    return true;
  }

  /**
   * One merge step owed: at most MERGE_PAGES pages (a transaction of its own). Whether more are owed; none once FTS5
   * finds nothing to merge (it counts two changes or more when it did, sqlite.org/fts5.html "The 'merge' Command").
   */
  private payMerge(): boolean {
    if (this.mergesOwed === 0) return false;
    const before = this.changes.get() as number;
    this.merge.run(MERGE_PAGES);
    this.mergesOwed = (this.changes.get() as number) - before >= 2 ? this.mergesOwed - 1 : 0;
    return this.mergesOwed > 0;
  }

  /** Under Kysely's connection lock (SQLite has one connection): no other statement interleaves with a batch. */
  private locked(fn: () => void): Promise<void> {
    if (this.closed) return Promise.resolve();
    return this.db.connection().execute(async () => fn());
  }
}
