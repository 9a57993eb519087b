// The SQLite data dir's one-process lock: SQLite's own exclusive lock on a lock file, which the kernel drops when its holder dies.
import fs from 'node:fs';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';

export class DataDirInUseError extends Error {}

/** The lock database (its exclusive lock is the lock) and the holder's pid beside it (only for the message). */
const LOCK_DB = 'crosstalk.lock.sqlite';
const HOLDER_FILE = 'crosstalk.lock.pid';
/** Earlier versions' pid-file lock: never trusted now (its pid may be reused), removed when found. */
const LEGACY_PID_FILE = 'crosstalk.lock';

/** Locks this process holds, by data dir: a runtime restarted in place (tests) takes its own lock again. */
const held = new Map<string, { db: BetterSqlite3.Database; users: number }>();

/**
 * SQLite is one process per data dir: a second start refuses with a clear message (its in-memory leases and recovery
 * assume it is the only writer). The lock is an fcntl lock SQLite takes on `crosstalk.lock.sqlite`
 * (`locking_mode=EXCLUSIVE` plus a write keeps it until the connection closes); the kernel releases it the moment the
 * holder exits, before it is even reaped, so a restart right after a kill -9 starts. The pid file beside it only
 * names the holder in the refusal; a stale one (a dead or reused pid) decides nothing.
 *
 * POSIX locks belong to the process, and closing any descriptor of the file drops them: nothing else in this process
 * may open the lock database (the pid lives in a file of its own for that reason).
 */
export function lockDataDir(Database: typeof BetterSqlite3, dataDir: string): () => void {
  const dir = fs.realpathSync(dataDir);
  const mine = held.get(dir);
  if (mine) {
    mine.users++;
    return once(() => release(dir));
  }
  const db = new Database(path.join(dir, LOCK_DB), { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    // The write takes SQLite's EXCLUSIVE lock, kept (locking_mode) until close: any other process gets SQLITE_BUSY.
    db.exec('CREATE TABLE IF NOT EXISTS holder (pid INTEGER NOT NULL); DELETE FROM holder;');
    db.prepare('INSERT INTO holder (pid) VALUES (?)').run(process.pid);
  } catch (e) {
    db.close();
    if ((e as { code?: string }).code?.startsWith('SQLITE_BUSY')) throw inUse(dir);
    throw e;
  }
  held.set(dir, { db, users: 1 });
  fs.rmSync(path.join(dir, LEGACY_PID_FILE), { force: true });
  fs.writeFileSync(path.join(dir, HOLDER_FILE), `${process.pid}\n`);
  return once(() => release(dir));
}

function release(dir: string): void {
  const mine = held.get(dir);
  if (!mine || --mine.users > 0) return;
  held.delete(dir);
  // The pid file goes first: once the lock is released, the next holder writes its own.
  fs.rmSync(path.join(dir, HOLDER_FILE), { force: true });
  mine.db.close();
}

/** The pid holding a POSIX lock on the file, from Linux's /proc/locks (the kernel's own word), or NaN. */
function lockHolderPid(file: string): number {
  try {
    const { ino } = fs.statSync(file);
    // "1: POSIX  ADVISORY  WRITE 14807 fe:00:2195906 1073741824 1073742335": pid, then major:minor:inode.
    for (const line of fs.readFileSync('/proc/locks', 'utf8').split('\n')) {
      const m = /\bPOSIX\s+\S+\s+\S+\s+(\d+)\s+[0-9a-f]+:[0-9a-f]+:(\d+)\s/.exec(line);
      if (m && Number(m[2]) === ino && Number(m[1]) > 0) return Number(m[1]);
    }
  } catch {
    /* not Linux, or no /proc */
  }
  return NaN;
}

function inUse(dir: string): DataDirInUseError {
  // The kernel's record first (right even while the new holder has not written its pid file yet), else that file.
  let pid = lockHolderPid(path.join(dir, LOCK_DB));
  if (Number.isNaN(pid)) {
    try {
      pid = Number(fs.readFileSync(path.join(dir, HOLDER_FILE), 'utf8').trim());
    } catch {
      /* the holder has not written it yet */
    }
  }
  const who = Number.isInteger(pid) && pid > 0 ? `another crosstalk process (pid ${pid})` : 'another crosstalk process';
  return new DataDirInUseError(
    `crosstalk: ${who} is using the data dir ${dir}. ` +
      'SQLite is one process per data dir; stop it first, or share a PostgreSQL (DATABASE_URL=postgres://…) to run several.',
  );
}

const once = (f: () => void) => {
  let done = false;
  return () => {
    if (!done) {
      done = true;
      f();
    }
  };
};
