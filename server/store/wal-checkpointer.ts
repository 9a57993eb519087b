// SQLite WAL checkpoints off the event loop: commits never checkpoint (wal_autocheckpoint 0); a worker thread with a
// connection of its own (started once the WAL has grown) copies the WAL into the database every CHECKPOINT_EVERY_MS
// and syncs it there, and the WAL starts over from its beginning (under writes that never pause, with one short step
// on the main connection: RESTART_AT_FRAMES).
import fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import { sqliteModuleBases } from './search-worker';

/**
 * How often the thread checkpoints. A commit that found the WAL fully copied starts it again from its beginning, so
 * the WAL stays about what the writes of this long add up to (a checkpoint with nothing to copy costs microseconds).
 */
export const CHECKPOINT_EVERY_MS = 250;
/**
 * Passes a checkpoint makes at most to catch up with the commits made while it copied. SQLite starts the WAL over
 * from its beginning only at a write that begins with every frame of it copied. A pass copies the frames that were
 * there when it began, so with commits going on, one pass a checkpoint never left the WAL whole: it grew for as long
 * as they went on (256–494 MB over 3,000 sequential turns, every commit then appending to the file, at about twice
 * the cost of writing over it: issue 24.4, BENCHMARKS.md "Stop 48"). Each pass copies what the one before left, a
 * shorter stretch, until one finds the WAL started over, or no commit for a millisecond (the next write starts it
 * over); a pass with nothing to copy costs microseconds.
 */
export const CATCH_UP_PASSES = 8;
/**
 * When the passes never found a gap between commits (sustained writes) and the WAL is at least this long (32 MiB of
 * 4 KiB pages), the thread hands the last step to the main connection: one PASSIVE checkpoint there, between two of
 * its writes, copies the frames since the thread's last pass (a millisecond or two, most of it the two syncs), and
 * its next write starts the WAL over. Not a RESTART checkpoint in the thread: that takes the writers' lock, and a
 * deferred transaction that has read already gets SQLITE_BUSY at its first write instead of waiting.
 */
export const RESTART_AT_FRAMES = 8192;
/** The main connection takes a hand-over only if it reads it within this long of the thread's last pass. */
export const HAND_OVER_WITHIN_MS = 25;
/** The thread starts when the WAL first reaches this size (SQLite's own autocheckpoint point: 1,000 pages of 4 KiB). */
export const START_AT_BYTES = 4 * 1024 * 1024;
/** How often the WAL's size is looked at until then. */
const WATCH_MS = 1000;
/** What the main connection's own autocheckpoint is set back to when the thread cannot run (SQLite's default). */
const AUTOCHECKPOINT_PAGES = 1000;

export interface CheckpointResult {
  /** Frames in the WAL, and of them copied into the database (PRAGMA wal_checkpoint's log and checkpointed). */
  log: number;
  checkpointed: number;
  busy: boolean;
}

// Before this (issue 24 items 1–2, bench/profile-loop.ts): the commit that took the WAL past 1000 pages copied them
// into the database and fsynced both files on the event loop, tens to hundreds of milliseconds with 50 runs streaming.
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const { createRequire } = require('node:module');
let Database;
for (const base of workerData.bases) {
  try { Database = createRequire(base)('better-sqlite3'); break; } catch {}
}
if (!Database) throw new Error('better-sqlite3 not found from ' + workerData.bases.join(', '));
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 0');
db.pragma('synchronous = NORMAL');
db.pragma('wal_autocheckpoint = 0');
const pass = () => db.pragma('wal_checkpoint(PASSIVE)')[0];
const nap = new Int32Array(new SharedArrayBuffer(4));
let handedOver = false;
const checkpoint = () => {
  if (workerData.gate) Atomics.wait(workerData.gate, 0, 1);
  // A pass's log is the WAL's length when it began. The WAL starts over at a write that begins with all of it copied:
  // pass again until a pass finds it started over (shorter), or no commit for a while (the next write will).
  let r = pass();
  let over = false;
  for (let i = 1, quiet = 0; i < workerData.passes && r.busy === 0; i++) {
    const before = r.log;
    if (quiet) Atomics.wait(nap, 0, 0, 1);
    r = pass();
    if (r.busy === 1 || (over = r.log < before)) break;
    quiet = r.log === before ? quiet + 1 : 0;
    if (quiet === 2) break;
  }
  // Commits never left the passes such a moment, and the WAL is long: the main connection copies what is left, between
  // two of its writes, so that its next write starts the WAL over. No tick here until it has: a pass here then would
  // make its checkpoint busy, or keep its next write from starting the WAL over.
  if (!over && r.busy === 0 && r.log >= workerData.restartAt) {
    handedOver = true;
    parentPort.postMessage({ behind: r.log, at: Date.now() });
  }
  return { log: r.log, checkpointed: r.checkpointed, busy: r.busy === 1 };
};
setInterval(() => { if (!handedOver) try { checkpoint(); } catch {} }, workerData.everyMs);
parentPort.on('message', (m) => {
  if (m.done) return void (handedOver = false);
  try { parentPort.postMessage({ id: m.id, result: checkpoint() }); }
  catch (e) { parentPort.postMessage({ id: m.id, error: String((e && e.message) || e) }); }
});
parentPort.postMessage({ ready: true });
`;

export interface WalCheckpointerOptions {
  everyMs?: number;
  /** Passes at most per checkpoint (CATCH_UP_PASSES); 1 is a single PASSIVE checkpoint. */
  passes?: number;
  /** The WAL's length in frames from which the main connection finishes a checkpoint whose passes never caught up. */
  restartAtFrames?: number;
  /** How old the thread's hand-over may be when the main connection reads it (HAND_OVER_WITHIN_MS). */
  handOverWithinMs?: number;
  /** Tests: while `gate[0]` is 1 the thread waits (Atomics.wait) before each checkpoint. */
  gate?: Int32Array;
  /** Where the thread looks for better-sqlite3 (tests: somewhere it is not, to see the fallback). */
  moduleBases?: string[];
  /** The WAL size that starts the thread (START_AT_BYTES), and how often it is looked at. */
  startAtBytes?: number;
  watchMs?: number;
}

/**
 * Made with the store; its thread starts when the WAL first passes START_AT_BYTES (a thread with its own
 * better-sqlite3 is ~13 MB of RSS, which an idle gateway need not pay: issue 24.5), or on `start()`. If the thread
 * cannot start (no better-sqlite3 for it), the main connection checkpoints itself again as SQLite does by default:
 * the WAL never grows without bound.
 */
export class WalCheckpointer {
  private worker?: Worker;
  private readonly waiting = new Map<number, { resolve: (r: CheckpointResult) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private closed = false;
  private startedP?: Promise<boolean>;
  /** How many times the main connection finished a checkpoint the thread's passes could not (tests, benches). */
  finished = 0;
  /** How many of the thread's hand-overs came too late to take (HAND_OVER_WITHIN_MS). */
  skipped = 0;
  private readonly watch: NodeJS.Timeout;

  constructor(
    private readonly file: string,
    private readonly main: import('better-sqlite3').Database,
    private readonly o: WalCheckpointerOptions = {},
  ) {
    main.pragma('wal_autocheckpoint = 0');
    // Until the thread runs: a look at the WAL's size now and then (a stat, off the event loop).
    this.watch = setInterval(() => {
      fs.stat(`${file}-wal`, (err, st) => {
        if (!err && st.size >= (o.startAtBytes ?? START_AT_BYTES)) void this.start();
      });
    }, o.watchMs ?? WATCH_MS);
    this.watch.unref();
  }

  /** Whether the thread has been started (it runs from then on). */
  get running(): boolean {
    return !!this.worker;
  }

  /** Starts the thread (once); true once it runs, false when it could not start (then the main connection checkpoints). */
  start(): Promise<boolean> {
    if (this.startedP) return this.startedP;
    clearInterval(this.watch);
    if (this.closed) return (this.startedP = Promise.resolve(false));
    const w = new Worker(THREAD, { eval: true, workerData: { file: this.file, bases: this.o.moduleBases ?? sqliteModuleBases(), everyMs: this.o.everyMs ?? CHECKPOINT_EVERY_MS, passes: this.o.passes ?? CATCH_UP_PASSES, restartAt: this.o.restartAtFrames ?? RESTART_AT_FRAMES, gate: this.o.gate } });
    w.unref();
    this.worker = w;
    let up!: (ok: boolean) => void;
    this.startedP = new Promise((r) => (up = r));
    w.on('message', (m: { ready?: boolean; behind?: number; at?: number; id?: number; result?: CheckpointResult; error?: string }) => {
      if (m.ready) return up(true);
      if (m.behind !== undefined) return this.finish(m.at ?? 0);
      const job = m.id === undefined ? undefined : this.waiting.get(m.id);
      if (!job) return;
      this.waiting.delete(m.id!);
      if (m.error) job.reject(new Error(m.error));
      else job.resolve(m.result!);
    });
    w.on('error', (e) => {
      // The thread could not start or died: the main connection checkpoints again (SQLite's default).
      if (!this.closed) this.main.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
      up(false);
      for (const job of this.waiting.values()) job.reject(e);
      this.waiting.clear();
    });
    return this.startedP;
  }

  /** One checkpoint now, in the thread, started if need be (tests, and whoever wants the WAL copied before going on). */
  async checkpoint(): Promise<CheckpointResult> {
    if (this.closed || !(await this.start()) || !this.worker) throw new Error(this.closed ? 'the store is closed' : 'no checkpoint thread');
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.waiting.set(id, { resolve, reject });
      this.worker!.postMessage({ id });
    });
  }

  /**
   * The main connection's own pass, between two of its writes (none open): its next write starts the WAL over. Not
   * when the thread's word is older than HAND_OVER_WITHIN_MS: the event loop was held meanwhile, and the pass would
   * copy what all those commits wrote, holding it again (the thread hands over again at its next tick).
   */
  private finish(at: number): void {
    try {
      if (this.closed || this.main.inTransaction) return;
      if (Date.now() - at > (this.o.handOverWithinMs ?? HAND_OVER_WITHIN_MS)) return void this.skipped++;
      const [r] = this.main.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number }>;
      if (r?.busy === 0) this.finished++;
    } catch {
      // Closing: nothing more to do. Busy or in a transaction: the thread's next checkpoint tries again.
    } finally {
      this.worker?.postMessage({ done: true });
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.watch);
    await this.worker?.terminate();
    for (const job of this.waiting.values()) job.reject(new Error('the store is closed'));
    this.waiting.clear();
  }
}
