// An exec command starts with fds 0-3 only: none of the fds the server inherited without close-on-exec (exec.ts CLOSE_FDS).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pidNamespace } from './exec-namespace';
import { CLOSE_FDS, closeInheritedFds } from './exec';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const SECRET = 'fd-secret-7f3a9c';
const HIGH = 200;
const LOW = 7;
const namespaced = 'unshare' in (await pidNamespace());
const hasBash = ['/usr/bin/bash', '/bin/bash'].some((f) => fs.existsSync(f));

let dir: string;
let secretFile: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-exec-fds-'));
  fs.chmodSync(dir, 0o755); // as root, exec runs as nobody, who must enter the workspace under it
  secretFile = path.join(dir, 'secret');
  fs.writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** stdio for a child with `fd` at LOW and at HIGH, where it inherits them without close-on-exec (as from `200<file`), and `fd3` at 3. */
function withFds(fd: number, fd3: number | 'ignore' = 'ignore'): (number | 'ignore' | 'pipe')[] {
  const stdio: (number | 'ignore' | 'pipe')[] = ['ignore', 'pipe', 'pipe', fd3, ...Array<'ignore'>(HIGH - 4).fill('ignore'), fd];
  stdio[LOW] = fd;
  return stdio;
}

/**
 * The exec tool in a server process of its own (node + tsx) started with the secret file open on fds LOW and HIGH,
 * running `command` as `user`; `namespace` false makes that process find no PID namespace (it seems not root to the probe).
 */
async function execInChild(command: string, user: string, namespace: boolean) {
  const script = `
    const { createExecTool } = await import('./server/tools/exec.ts');
    const { execIdentity } = await import('./server/tools/exec-isolation.ts');
    const { parseRawConfig, resolveConfig } = await import('./server/config.ts');
    const fs = await import('node:fs');
    const e = process.env;
    const config = resolveConfig(parseRawConfig({ agents: [{ id: 'main', exec: { user: e.CT_USER } }] }), { CROSSTALK_DATA_DIR: e.CT_DIR + '/data', CROSSTALK_WORKSPACES: e.CT_DIR + '/ws-' + e.CT_USER + '-' + e.CT_NS });
    const id = execIdentity(e.CT_USER); // who it runs as, found as root
    if (e.CT_NS === '0') process.getuid = () => 65534; // the namespace probe then finds none
    const held = [${LOW}, ${HIGH}].filter((fd) => { try { return fs.fstatSync(fd).isFile(); } catch { return false; } });
    const ctx = { agent: config.agents[0], signal: new AbortController().signal, runId: 'r', sessionKey: 'agent:main:main', callId: 'c' };
    const result = await createExecTool().execute({ command: e.CT_COMMAND }, ctx);
    process.stdout.write(JSON.stringify({ held, isolated: id.isolated, result }));
  `;
  const fd = fs.openSync(secretFile, 'r');
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      env: { ...process.env, CT_DIR: dir, CT_USER: user, CT_NS: namespace ? '1' : '0', CT_COMMAND: command },
      stdio: withFds(fd) as never,
    });
    let out = '';
    let err = '';
    child.stdout!.on('data', (d: Buffer) => (out += d));
    child.stderr!.on('data', (d: Buffer) => (err += d));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    if (code !== 0) throw new Error(`child exited ${code}: ${err}`);
    return JSON.parse(out) as { held: number[]; isolated: boolean; result: { status: string; exitCode: number; stdout: string; stderr: string } };
  } finally {
    fs.closeSync(fd);
  }
}

// Who and where it runs, the shell's own fds (ls is its child), then a read of the secret from fd HIGH: dash reads
// one-digit fds only (and Node itself marks 3-15 close-on-exec at start, so LOW never reaches the command).
const READ_HIGH = hasBash ? `bash -c 'cat <&${HIGH}'` : `cat /proc/$$/fd/${HIGH}`;
const COMMAND = `id -u; echo $$; ls /proc/$$/fd; ${READ_HIGH}`;

describe.skipIf(process.platform !== 'linux')('exec closes the fds the server inherited', () => {
  const cases = [
    { user: 'nobody', namespace: true, name: 'as nobody in a PID namespace' },
    { user: 'nobody', namespace: false, name: 'as nobody without a PID namespace (spawn drops the user)' },
    { user: 'root', namespace: true, name: 'not isolated (exec.user root), in a PID namespace' },
    { user: 'root', namespace: false, name: 'not isolated, without a PID namespace' },
  ];
  for (const c of cases) {
    const runs = c.user === 'root' || process.getuid?.() === 0; // nobody means isolation, which needs root
    it.runIf(runs && (!c.namespace || namespaced))(`${c.name}: only 0-3 are open and the secret is not read`, async () => {
      const { held, isolated, result } = await execInChild(COMMAND, c.user, c.namespace);
      expect(held).toEqual([LOW, HIGH]); // the server process had them
      expect(isolated).toBe(c.user !== 'root');
      expect(result.status).toBe('ok');
      const [uid, pid, ...fds] = result.stdout.trim().split('\n');
      expect(Number(uid)).toBe(c.user === 'root' ? process.getuid?.() : 65534); // root: the server's own user
      // In a namespace of its own, under its first process (timeout), after the mounts of its private /tmp (pids 2-4).
      expect(Number(pid) <= 8).toBe(c.namespace);
      expect(fds).toEqual(['0', '1', '2', '3']);
      expect(result.stdout + result.stderr).not.toContain(SECRET);
      expect(result.exitCode).not.toBe(0); // cat had no fd HIGH
    }, 60_000);
  }
});

describe('CLOSE_FDS', () => {
  /** `sh -c CLOSE_FDS` (as closeInheritedFds starts it) with the secret on LOW and HIGH and /dev/null as fd 3, running `command`. */
  function run(command: string, shell?: string, script = CLOSE_FDS) {
    const fd = fs.openSync(secretFile, 'r');
    const marker = fs.openSync('/dev/null', 'r');
    try {
      const [file, args] = closeInheritedFds(['/bin/sh', ['-c', command]], shell);
      const r = spawnSync(file, args.map((a) => (a === CLOSE_FDS ? script : a)), { stdio: withFds(fd, marker) as never, encoding: 'utf8' });
      return { status: r.status, stdout: String(r.stdout), stderr: String(r.stderr) };
    } finally {
      fs.closeSync(fd);
      fs.closeSync(marker);
    }
  }

  it.runIf(hasBash)('passes the command line unchanged, $0 and all', () => {
    const r = run(`printf '%s|' "$0" 'a b' "$(echo '$HOME')"; ls /proc/$$/fd`); // no pipeline: the shell would hold its ends
    expect(r).toEqual({ status: 0, stdout: '/bin/sh|a b|$HOME|0\n1\n2\n3\n', stderr: '' });
  });

  it.runIf(hasBash)('without /proc, closes 4 up to the fd limit', () => {
    const r = run('ls /proc/$$/fd', undefined, CLOSE_FDS.replace('/proc/self/fd', '/nonexistent'));
    expect(r).toEqual({ status: 0, stdout: '0\n1\n2\n3\n', stderr: '' });
  });

  it('in a shell that closes one-digit fds only (dash), refuses to run the command when a higher one is open', () => {
    const dash = ['/usr/bin/dash', '/bin/dash'].find((f) => fs.existsSync(f));
    if (!dash) return;
    const r = run('echo ran', dash);
    expect(r.status).toBe(126);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^crosstalk-exec: cannot close the inherited fd \d{2,}: this shell closes fds 0-9 only$/m);
  });
});
