// SQLite WAL checkpoints off the event loop: the main connection never checkpoints (wal_autocheckpoint 0); a worker
// thread with a connection of its own runs a PASSIVE checkpoint every CHECKPOINT_EVERY_MS, so the WAL is copied into
// the database and synced there, while commits on the main thread only append to it.
import { Worker } from 'node:worker_threads';
import { sqliteModuleBases } from './search-worker';

/**
 * How often the thread checkpoints. A commit that found the WAL fully copied starts it again from its beginning, so
 * the WAL stays about what the writes of this long add up to (a checkpoint with nothing to copy costs microseconds).
 */
export const CHECKPOINT_EVERY_MS = 250;
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
}

/**
 * Started with the store. If the thread cannot start (no better-sqlite3 for it), the main connection checkpoints
 * itself again as SQLite does by default: the WAL never grows without bound.
 */
export class WalCheckpointer {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve: (r: CheckpointResult) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private closed = false;
  /** Resolves true once the thread runs, false when it could not start (then the main connection checkpoints). */
  readonly started: Promise<boolean>;

  constructor(
    file: string,
    private readonly main: import('better-sqlite3').Database,
    o: WalCheckpointerOptions = {},
  ) {
    main.pragma('wal_autocheckpoint = 0');
    this.worker = new Worker(THREAD, { eval: true, workerData: { file, bases: o.moduleBases ?? sqliteModuleBases(), everyMs: o.everyMs ?? CHECKPOINT_EVERY_MS, gate: o.gate } });
    this.worker.unref();
    let up!: (ok: boolean) => void;
    this.started = new Promise((r) => (up = r));
    this.worker.on('message', (m: { ready?: boolean; id?: number; result?: CheckpointResult; error?: string }) => {
      if (m.ready) return up(true);
      const w = m.id === undefined ? undefined : this.waiting.get(m.id);
      if (!w) return;
      this.waiting.delete(m.id!);
      if (m.error) w.reject(new Error(m.error));
      else w.resolve(m.result!);
    });
    this.worker.on('error', (e) => {
      // The thread could not start or died: the main connection checkpoints again (SQLite's default).
      if (!this.closed) this.main.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
      up(false);
      for (const w of this.waiting.values()) w.reject(e);
      this.waiting.clear();
    });
  }

  /** One checkpoint now, in the thread (tests, and whoever wants the WAL copied before going on). */
  checkpoint(): Promise<CheckpointResult> {
    if (this.closed) return Promise.reject(new Error('the store is closed'));
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ id });
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.worker.terminate();
    for (const w of this.waiting.values()) w.reject(new Error('the store is closed'));
    this.waiting.clear();
  }
}
