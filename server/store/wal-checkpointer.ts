// SQLite WAL checkpoints off the event loop: the main connection never checkpoints (wal_autocheckpoint 0); a worker
// thread with a connection of its own (started once the WAL has grown) runs a PASSIVE checkpoint every
// CHECKPOINT_EVERY_MS, so the WAL is copied into the database and synced there, while commits only append to it.
import fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import { sqliteModuleBases } from './search-worker';

/**
 * How often the thread checkpoints. A commit that found the WAL fully copied starts it again from its beginning, so
 * the WAL stays about what the writes of this long add up to (a checkpoint with nothing to copy costs microseconds).
 */
export const CHECKPOINT_EVERY_MS = 250;
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
const checkpoint = () => {
  if (workerData.gate) Atomics.wait(workerData.gate, 0, 1);
  const r = db.pragma('wal_checkpoint(PASSIVE)')[0];
  return { log: r.log, checkpointed: r.checkpointed, busy: r.busy === 1 };
};
setInterval(() => { try { checkpoint(); } catch {} }, workerData.everyMs);
parentPort.on('message', (m) => {
  try { parentPort.postMessage({ id: m.id, result: checkpoint() }); }
  catch (e) { parentPort.postMessage({ id: m.id, error: String((e && e.message) || e) }); }
});
parentPort.postMessage({ ready: true });
`;

export interface WalCheckpointerOptions {
  everyMs?: number;
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
    const w = new Worker(THREAD, { eval: true, workerData: { file: this.file, bases: this.o.moduleBases ?? sqliteModuleBases(), everyMs: this.o.everyMs ?? CHECKPOINT_EVERY_MS, gate: this.o.gate } });
    w.unref();
    this.worker = w;
    let up!: (ok: boolean) => void;
    this.startedP = new Promise((r) => (up = r));
    w.on('message', (m: { ready?: boolean; id?: number; result?: CheckpointResult; error?: string }) => {
      if (m.ready) return up(true);
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

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.watch);
    await this.worker?.terminate();
    for (const job of this.waiting.values()) job.reject(new Error('the store is closed'));
    this.waiting.clear();
  }
}
