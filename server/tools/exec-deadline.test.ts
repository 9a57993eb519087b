// An exec command's deadline holds when the gateway is gone: the shell runs under coreutils' timeout (exec.ts shellArgv).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startChildServer, until } from '../testing/harness';
import { sleepers as procSleepers } from '../testing/procs';
import { inPidNamespace, pidNamespace } from './exec-namespace';
import { shellArgv, TIMEOUT_GRACE_S } from './exec';

const hasTimeout = fs.existsSync('/usr/bin/timeout') || fs.existsSync('/bin/timeout');
const MARK = '31.4159'; // sleep's argument: finds the command's process in /proc
const ESCAPED = '31.4158'; // a grandchild's, one that left the command's session and closed its marker fd
const sleepers = () => procSleepers(MARK);
const ns = await pidNamespace();
const hasNamespace = 'unshare' in ns;
const hasSetpriv = fs.existsSync('/usr/bin/setpriv') || fs.existsSync('/bin/setpriv');

describe('exec when the gateway dies', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const pid of [...sleepers(), ...procSleepers(ESCAPED)]) process.kill(pid, 'SIGKILL');
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('runs the shell under timeout, its deadline a little after the gateway’s own', () => {
    const [file, argv] = shellArgv('echo hi', 10);
    if (!hasTimeout) return expect([file, argv]).toEqual(['/bin/sh', ['-c', 'echo hi']]);
    expect(path.basename(file)).toBe('timeout');
    expect(argv).toEqual(['-s', 'KILL', `${10 + TIMEOUT_GRACE_S}s`, '/bin/sh', '-c', 'echo hi']);
  });

  it('in a PID namespace, the shell drops to the exec user below timeout (setpriv), or unshare does without setpriv', () => {
    const id = { uid: 65534, gid: 65534 };
    const [file, args] = shellArgv('echo hi', 10, { unshare: '/usr/bin/unshare', id }, '/s');
    const [plain, plainArgs] = shellArgv('echo hi', 10, undefined, null);
    const drop = ['/s', '--regid', '65534', '--reuid', '65534', '--clear-groups', '--'];
    const below = hasTimeout ? [plain, ...plainArgs.slice(0, 3), ...drop, ...plainArgs.slice(3)] : [...drop, plain, ...plainArgs];
    // unshare's flags, and setpriv around it: exec-namespace.test.ts. unshare itself stays root's (no --setuid).
    expect([file, args]).toEqual(inPidNamespace('/usr/bin/unshare', below, undefined, '/s'));
    expect(args).not.toContain('--setuid');
    expect(shellArgv('echo hi', 10, { unshare: '/usr/bin/unshare', id }, null)).toEqual(inPidNamespace('/usr/bin/unshare', [plain, ...plainArgs], id, null));
  });

  /** A gateway child (exec `auto`) running `command` in `sessionKey`'s run, once `running()` says it is. */
  async function gatewayRunning(sessionKey: string, command: string, timeoutSeconds: number, running: () => boolean) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-exec-deadline-'));
    fs.chmodSync(dir, 0o755); // as root, exec runs as nobody, who must enter the workspace under it
    dirs.push(dir);
    const configFile = path.join(dir, 'crosstalk.config.json');
    fs.writeFileSync(configFile, JSON.stringify({ agents: [{ id: 'main', tools: { exec: 'auto' } }] }));
    const gw = await startChildServer({ dataDir: path.join(dir, 'data'), configFile });
    await gw.rpc('agent', { sessionKey, message: `/tool exec ${JSON.stringify({ command, timeoutSeconds })}` });
    await until(running, 20_000).catch(async (e) => {
      throw new Error(`${e.message}: ${JSON.stringify(await gw.rpc('chat.history', { sessionKey }))}`);
    });
    return gw;
  }

  it.runIf(hasTimeout)('a command still running when the gateway is killed with SIGKILL ends by its deadline', async () => {
    expect(sleepers()).toEqual([]);
    const gw = await gatewayRunning('agent:main:deadline', `sleep ${MARK}; true`, 2, () => sleepers().length === 1);
    gw.kill();
    await gw.exited;
    // Without a deadline of its own the command ran its 31 s, reparented to init.
    const t0 = Date.now();
    await until(() => sleepers().length === 0, 15_000);
    expect(Date.now() - t0).toBeLessThan(15_000);
  }, 60_000);

  // With setpriv: at once, the deadline 62 s away (before, unshare started straight from the gateway, both ran on to
  // it: the kernel clears unshare's --kill-child signal at --setuid). Without it: at the deadline (without the
  // namespace, timeout killed its own process group there and the escapee ran its 31 s).
  it.runIf(hasTimeout && hasNamespace)(
    `with the gateway killed, the command and a grandchild that left the session and closed fd 3 end ${hasSetpriv ? 'at once' : 'at the deadline'} (PID namespace)`,
    async () => {
      const command = `setsid sh -c 'exec 3>&-; exec sleep ${ESCAPED}' >/dev/null 2>&1 & sleep ${MARK}; true`;
      const gw = await gatewayRunning('agent:main:deadline-escape', command, hasSetpriv ? 60 : 2, () => sleepers().length === 1 && procSleepers(ESCAPED).length === 1);
      gw.kill();
      await gw.exited;
      await until(() => sleepers().length === 0 && procSleepers(ESCAPED).length === 0, hasSetpriv ? 10_000 : 15_000);
    },
    60_000,
  );
});
