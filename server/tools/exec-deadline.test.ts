// An exec command's deadline holds when the gateway is gone: the shell runs under coreutils' timeout (exec.ts shellArgv).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startChildServer, until } from '../testing/harness';
import { isRunning } from '../testing/procs';
import { shellArgv, TIMEOUT_GRACE_S } from './exec';

const hasTimeout = fs.existsSync('/usr/bin/timeout') || fs.existsSync('/bin/timeout');
const MARK = '31.4159'; // sleep's argument: finds the command's process in /proc

/** Live (not zombie) pids whose command line is `sleep <MARK>`. */
function sleepers(): number[] {
  const pids: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (fs.readFileSync(`/proc/${d}/cmdline`, 'utf8') === `sleep\0${MARK}\0` && isRunning(Number(d))) pids.push(Number(d));
    } catch {
      // gone while read
    }
  }
  return pids;
}

describe('exec when the gateway dies', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const pid of sleepers()) process.kill(pid, 'SIGKILL');
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('runs the shell under timeout, its deadline a little after the gateway’s own', () => {
    const [file, argv] = shellArgv('echo hi', 10);
    if (!hasTimeout) return expect([file, argv]).toEqual(['/bin/sh', ['-c', 'echo hi']]);
    expect(path.basename(file)).toBe('timeout');
    expect(argv).toEqual(['-s', 'KILL', `${10 + TIMEOUT_GRACE_S}s`, '/bin/sh', '-c', 'echo hi']);
  });

  it.runIf(hasTimeout)('a command still running when the gateway is killed with SIGKILL ends at its deadline', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-exec-deadline-'));
    fs.chmodSync(dir, 0o755); // as root, exec runs as nobody, who must enter the workspace under it
    dirs.push(dir);
    const configFile = path.join(dir, 'crosstalk.config.json');
    fs.writeFileSync(configFile, JSON.stringify({ agents: [{ id: 'main', tools: { exec: 'auto' } }] }));
    const gw = await startChildServer({ dataDir: path.join(dir, 'data'), configFile });
    expect(sleepers()).toEqual([]);
    await gw.rpc('agent', { sessionKey: 'agent:main:deadline', message: `/tool exec ${JSON.stringify({ command: `sleep ${MARK}; true`, timeoutSeconds: 2 })}` });
    await until(() => sleepers().length === 1, 20_000).catch(async (e) => {
      throw new Error(`${e.message}: ${JSON.stringify(await gw.rpc('chat.history', { sessionKey: 'agent:main:deadline' }))}`);
    });
    gw.kill();
    await gw.exited;
    // Without a deadline of its own the command ran its 31 s, reparented to init.
    const t0 = Date.now();
    await until(() => sleepers().length === 0, 15_000);
    expect(Date.now() - t0).toBeLessThan(15_000);
  }, 60_000);
});
