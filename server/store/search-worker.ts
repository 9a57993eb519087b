// SQLite sessions.search off the event loop: one worker thread with its own read-only connection, a queue, and a time bound.
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { CrosstalkError } from '../errors';
import { inThreadSqliteSearch, SQLITE_SEARCH_SOURCE, type SqliteSearchHit, type SqliteSearchQuery } from './search-sqlite';

/** A search still running after this long is stopped (its worker terminated, a fresh one started for the next). */
export const SEARCH_TIMEOUT_MS = 10_000;
/** Searches waiting behind the running one; more are refused (`rate_limited`). */
export const SEARCH_QUEUE = 32;
/** Time a new thread may take to start (load better-sqlite3, open the file) before its first search's bound runs. */
const WORKER_START_MS = 10_000;

export interface SqliteSearcherOptions {
  timeoutMs?: number;
  /**
   * Tests: while `gate[0]` is 1 the worker waits (Atomics.wait) before each search, so a test can hold a search
   * running and see the main thread go on.
   */
  gate?: Int32Array;
  /** Where the thread looks for better-sqlite3 (tests: somewhere it is not, to see the fallback). */
  moduleBases?: string[];
  /** Runs before each search (the store's: the full-text index caught up with every message written, ./search-indexer). */
  beforeSearch?: () => Promise<void>;
}

// The thread: better-sqlite3 resolved from where the main thread's code lives (a bundle's chunk, the start script or
// the working directory), the WAL file opened read-only, one search answered per message.
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const { createRequire } = require('node:module');
let Database;
for (const base of workerData.bases) {
  try { Database = createRequire(base)('better-sqlite3'); break; } catch {}
}
if (!Database) throw new Error('better-sqlite3 not found from ' + workerData.bases.join(', '));
${SQLITE_SEARCH_SOURCE}
const db = new Database(workerData.file, { readonly: true, fileMustExist: true });
db.pragma('busy_timeout = 5000');
const search = createSqliteSearch(db);
parentPort.postMessage({ ready: true });
parentPort.on('message', (m) => {
  if (workerData.gate) Atomics.wait(workerData.gate, 0, 1);
  try { parentPort.postMessage({ id: m.id, hits: search(m.q) }); }
  catch (e) { parentPort.postMessage({ id: m.id, error: String((e && e.message) || e) }); }
});
`;

/** Where a thread looks for better-sqlite3: from where this code lives (a bundle's chunk), the start script, the working directory. */
export function sqliteModuleBases(): string[] {
  return [import.meta.url, process.argv[1], path.join(process.cwd(), 'index.js')].filter((b): b is string => !!b);
}

interface Job {
  id: number;
  q: SqliteSearchQuery;
  resolve: (hits: SqliteSearchHit[]) => void;
  reject: (e: unknown) => void;
  timer?: NodeJS.Timeout;
}

/** Started lazily on the first search; `close()` ends the thread. */
export class SqliteSearcher {
  private worker?: Worker;
  private ready?: Promise<void>;
  private inThread?: (q: SqliteSearchQuery) => SqliteSearchHit[];
  private readonly queue: Job[] = [];
  private running?: Job;
  private nextId = 1;
  private closed = false;
  private warned = false;
  /** Threads started so far (tests: a stopped search's thread is replaced). */
  started = 0;

  constructor(
    readonly file: string,
    private readonly opts: SqliteSearcherOptions = {},
  ) {}

  async search(q: SqliteSearchQuery): Promise<SqliteSearchHit[]> {
    if (this.closed) throw new CrosstalkError('internal', 'the store is closed');
    // An index that could not catch up (a locked or failing write) still answers with what it holds: at most the
    // messages of the last INDEX_EVERY_MS are missing, and the indexer's next tick tries again.
    await this.opts.beforeSearch?.().catch((e: unknown) => {
      if (!this.warned) console.warn(`crosstalk: the search index could not catch up before a search (${(e as Error)?.message ?? e}); answering from what it holds`);
      this.warned = true;
    });
    return this.queued(q);
  }

  private queued(q: SqliteSearchQuery): Promise<SqliteSearchHit[]> {
    if (this.closed) return Promise.reject(new CrosstalkError('internal', 'the store is closed'));
    if (this.inThread) return Promise.resolve(this.inThread(q));
    if (this.queue.length >= SEARCH_QUEUE) return Promise.reject(new CrosstalkError('rate_limited', 'too many searches waiting; try again'));
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, q, resolve, reject });
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const j of this.queue.splice(0)) j.reject(new CrosstalkError('internal', 'the store is closed'));
    if (this.running) this.finish(this.running, undefined, new CrosstalkError('internal', 'the store is closed'));
    const w = this.worker;
    this.worker = undefined;
    await w?.terminate();
  }

  private pump(): void {
    if (this.running || this.closed) return;
    const job = this.queue.shift();
    if (!job) return;
    if (this.inThread) {
      try {
        job.resolve(this.inThread(job.q));
      } catch (e) {
        job.reject(e);
      }
      this.pump();
      return;
    }
    this.running = job;
    const w = this.ensureWorker();
    const ms = this.opts.timeoutMs ?? SEARCH_TIMEOUT_MS;
    // The bound is the search's own time; a thread that is still starting gets WORKER_START_MS on top.
    job.timer = setTimeout(
      () => {
        // better-sqlite3 cannot interrupt a statement: the thread goes, and with it the statement.
        this.stopWorker();
        this.finish(job, undefined, new CrosstalkError('timeout', `search took longer than ${ms / 1000} s; add words to narrow it`));
      },
      w.isReady() ? ms : ms + WORKER_START_MS,
    );
    void w.ready.then(() => {
      if (this.running === job && this.worker === w.thread) w.thread.postMessage({ id: job.id, q: job.q });
    });
  }

  private finish(job: Job, hits: SqliteSearchHit[] | undefined, error?: unknown): void {
    if (this.running !== job) return;
    clearTimeout(job.timer);
    this.running = undefined;
    if (error) job.reject(error);
    else job.resolve(hits!);
    queueMicrotask(() => this.pump());
  }

  private stopWorker(): void {
    const w = this.worker;
    this.worker = undefined;
    w?.removeAllListeners();
    void w?.terminate();
  }

  private ensureWorker(): { thread: Worker; ready: Promise<void>; isReady: () => boolean } {
    if (this.worker && this.ready) return { thread: this.worker, ready: this.ready, isReady: () => true };
    const bases = this.opts.moduleBases ?? sqliteModuleBases();
    const w = new Worker(THREAD, { eval: true, workerData: { file: this.file, bases, gate: this.opts.gate } });
    this.started++;
    let ready = false;
    let up!: () => void;
    this.ready = new Promise<void>((r) => (up = r));
    w.on('message', (m: { ready?: boolean; id?: number; hits?: SqliteSearchHit[]; error?: string }) => {
      if (m.ready) {
        ready = true;
        up();
      } else if (this.running && m.id === this.running.id) this.finish(this.running, m.hits, m.error ? new Error(m.error) : undefined);
    });
    w.on('error', (e) => {
      if (this.worker !== w) return;
      this.worker = undefined;
      if (!ready) {
        // The thread could not start here (no better-sqlite3 for it to load): search in this thread instead.
        process.emitWarning(`search worker did not start (${String(e)}); searching on the main thread`);
        void this.fallBack().then(() => this.retryRunning());
      } else if (this.running) this.finish(this.running, undefined, e);
    });
    w.unref();
    this.worker = w;
    return { thread: w, ready: this.ready, isReady: () => ready };
  }

  private async fallBack(): Promise<void> {
    const { default: BetterSqlite3 } = await import('better-sqlite3');
    this.inThread = inThreadSqliteSearch(new BetterSqlite3(this.file, { readonly: true, fileMustExist: true }));
  }

  private retryRunning(): void {
    const job = this.running;
    if (!job) return this.pump();
    clearTimeout(job.timer);
    this.running = undefined;
    this.queue.unshift(job);
    this.pump();
  }
}
