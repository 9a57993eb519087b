// The SQLite data-dir lock with real processes: a kill -9 frees it at once (zombie or reaped), a live holder is named, a stale pid decides nothing.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startChildServer, TEST_TOKEN, tmpDataDir, until } from '../testing/harness';
import { DataDirInUseError, openDatabase } from './db';
import { onPostgresPass } from '../testing/store-under-test';
import { childArgs } from '../testing/child-bundle';

const onPg = onPostgresPass();
const cleanup: Array<() => void> = [];
afterEach(() => {
  while (cleanup.length) cleanup.pop()!();
});

/** The state letter of /proc/<pid>/stat (`Z` for a zombie), or null once the pid is gone. */
function procState(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return null;
  }
}

/**
 * A crosstalk server whose parent never reaps it: a shell starts it in the background, then becomes `sleep`, which
 * never calls wait(). Killed, the server stays a zombie until the sleeper goes.
 */
async function serverWithNonReapingParent(dataDir: string): Promise<{ pid: number; url: string; parent: ChildProcess }> {
  const parent = spawn('sh', ['-c', `${[process.execPath, ...childArgs('child-server')].map((a) => `"${a}"`).join(' ')} & echo "PID $!"; exec sleep 600`], {
    env: { ...process.env, CROSSTALK_DATA_DIR: dataDir, CROSSTALK_WORKSPACES: `${dataDir}-ws`, CROSSTALK_TOKEN: TEST_TOKEN, CROSSTALK_LOG_LEVEL: 'silent', DATABASE_URL: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  cleanup.push(() => parent.kill('SIGKILL'));
  let out = '';
  parent.stdout!.on('data', (d: Buffer) => (out += d));
  const [, pid, url] = await until(() => /PID (\d+)[\s\S]*LISTENING (\S+)/.exec(out), 60_000);
  return { pid: Number(pid), url: url!, parent };
}

const status = async (url: string) => {
  const res = await fetch(`${url}/api/gateway`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'status', params: {} }),
  });
  return (await res.json()).result;
};

describe.skipIf(onPg)('the SQLite data-dir lock (CONTRACT §1)', () => {
  it('a server killed with SIGKILL frees the data dir at once: a restart starts while the dead one is still a zombie, and after it is reaped', { timeout: 120_000 }, async () => {
    const dataDir = tmpDataDir();
    const first = await serverWithNonReapingParent(dataDir);
    expect(await status(first.url)).toHaveProperty('activeRuns');
    process.kill(first.pid, 'SIGKILL');
    // Not reaped: its parent (sleep) never waits. The pid is still there, and "alive" to kill(pid, 0).
    await until(() => procState(first.pid) === 'Z');
    expect(() => process.kill(first.pid, 0)).not.toThrow();

    const second = await startChildServer({ dataDir, env: { DATABASE_URL: '' } });
    cleanup.push(() => second.kill());
    expect(await status(second.url)).toHaveProperty('activeRuns');
    expect(procState(first.pid)).toBe('Z');

    // The same again once the killed one is reaped (node reaps its own children).
    second.kill();
    await second.exited;
    first.parent.kill('SIGKILL');
    const third = await startChildServer({ dataDir, env: { DATABASE_URL: '' } });
    cleanup.push(() => third.kill());
    expect(await status(third.url)).toHaveProperty('activeRuns');
  });

  it('a live holder: a second opener is refused with a message naming its pid', { timeout: 60_000 }, async () => {
    const dataDir = tmpDataDir();
    const holder = await startChildServer({ dataDir, env: { DATABASE_URL: '' } });
    cleanup.push(() => holder.kill());
    const err = await openDatabase({ dataDir }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DataDirInUseError);
    expect((err as Error).message).toContain(`another crosstalk process (pid ${holder.child.pid}) is using the data dir`);
    // The holder is unharmed by the refused attempt (a closed descriptor of the lock file must not drop its lock).
    expect(await status(holder.url)).toHaveProperty('activeRuns');
    // The kernel's record names the holder even when the pid file beside the lock is wrong (or not written yet).
    fs.writeFileSync(path.join(dataDir, 'crosstalk.lock.pid'), '1');
    const again = await openDatabase({ dataDir }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(DataDirInUseError);
    if (fs.existsSync('/proc/locks')) expect((again as Error).message).toContain(`(pid ${holder.child.pid})`);
  });

  it('a stale pid file naming a live process that is not crosstalk (a reused pid) does not block a start', async () => {
    const dataDir = tmpDataDir();
    const stranger = spawn('sleep', ['600'], { stdio: 'ignore' });
    cleanup.push(() => stranger.kill('SIGKILL'));
    // What an earlier crash (or an earlier version's pid-file lock) leaves behind, its pid now someone else's.
    fs.writeFileSync(path.join(dataDir, 'crosstalk.lock'), String(stranger.pid));
    fs.writeFileSync(path.join(dataDir, 'crosstalk.lock.pid'), String(stranger.pid));
    const db = await openDatabase({ dataDir });
    try {
      expect(fs.readFileSync(path.join(dataDir, 'crosstalk.lock.pid'), 'utf8').trim()).toBe(String(process.pid));
    } finally {
      await db.close();
    }
  });

  it('the same process may open its data dir again (a runtime restarted in place); the lock goes with the last close', async () => {
    const dataDir = tmpDataDir();
    const a = await openDatabase({ dataDir });
    const b = await openDatabase({ dataDir });
    await a.close();
    await a.close();
    const child = spawn(process.execPath, childArgs('child-server'), {
      env: { ...process.env, CROSSTALK_DATA_DIR: dataDir, CROSSTALK_TOKEN: 'x', CROSSTALK_LOG_LEVEL: 'silent', DATABASE_URL: '' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    cleanup.push(() => child.kill('SIGKILL'));
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    expect(await new Promise((r) => child.on('exit', r))).not.toBe(0);
    expect(err).toContain(`another crosstalk process (pid ${process.pid})`);
    await b.close();
    const c = await openDatabase({ dataDir });
    await c.close();
  }, 60_000);
});
