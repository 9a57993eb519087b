// exec's PID namespace: the probe (used where unshare works as root, a reason to warn with elsewhere), and a command's own /tmp there.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRawConfig, resolveConfig } from '../config';
import { createExecTool } from './exec';
import { sharedTmpReason } from './exec-isolation';
import { inPidNamespace, pidNamespace, PRIVATE_TMP, privateTmpFor, probePidNamespace, tmpfsSize } from './exec-namespace';

const ns = await pidNamespace();
const hasSetpriv = fs.existsSync('/usr/bin/setpriv') || fs.existsSync('/bin/setpriv');
const hasMount = fs.existsSync('/usr/bin/mount') || fs.existsSync('/bin/mount');

describe('probePidNamespace', () => {
  it('needs root and util-linux unshare', async () => {
    expect(await probePidNamespace('/usr/bin/unshare', 1000)).toEqual({ reason: 'the server does not run as root' });
    expect(await probePidNamespace(null, 0)).toEqual({ reason: 'there is no util-linux unshare' });
  });

  it('gives the reason when unshare fails (a container without CAP_SYS_ADMIN)', async () => {
    const ns = await probePidNamespace('/bin/false', 0);
    expect(ns).toMatchObject({ reason: expect.stringMatching(/^unshare --pid failed \(.+\); a container needs CAP_SYS_ADMIN for it$/) });
  });

  it('inPidNamespace drops to the user only when given one', () => {
    expect(inPidNamespace('/u', ['/bin/sh', '-c', 'x'], undefined, null)).toEqual(['/u', ['--pid', '--fork', '--kill-child', '--mount-proc', '--', '/bin/sh', '-c', 'x']]);
    expect(inPidNamespace('/u', ['/bin/sh'], { uid: 7, gid: 8 }, null)[1]).toEqual(['--pid', '--fork', '--kill-child', '--mount-proc', '--setgid', '8', '--setuid', '7', '--', '/bin/sh']);
  });

  it('inPidNamespace starts unshare through setpriv --pdeathsig KILL where there is one (it dies with the gateway)', () => {
    expect(inPidNamespace('/u', ['/bin/sh'], { uid: 7, gid: 8 }, '/s')).toEqual([
      '/s',
      ['--pdeathsig', 'KILL', '--', '/u', '--pid', '--fork', '--kill-child', '--mount-proc', '--setgid', '8', '--setuid', '7', '--', '/s', '--pdeathsig', 'KILL', '--', '/bin/sh'],
    ]);
  });
});

describe('exec while the namespace is found out', () => {
  it('a run interrupted meanwhile never starts its command', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-exec-ns-'));
    fs.chmodSync(dir, 0o755); // as root, exec runs as nobody, who must enter the workspace under it
    try {
      const config = resolveConfig(parseRawConfig({}), { CROSSTALK_DATA_DIR: path.join(dir, 'data'), CROSSTALK_WORKSPACES: path.join(dir, 'ws') });
      const ac = new AbortController();
      const ctx = { agent: config.agents[0]!, signal: ac.signal, runId: 'r', sessionKey: 'agent:main:main', callId: 'c' };
      // The first command of this process waits for the probe; the cancel lands in that wait.
      const result = createExecTool().execute({ command: 'touch started' }, ctx as never);
      ac.abort();
      expect(await result).toMatchObject({ status: 'error', error: { code: 'interrupted' } });
      await new Promise((r) => setTimeout(r, 300));
      expect(fs.existsSync(path.join(config.agents[0]!.workspace, 'started'))).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('private folders (unit)', () => {
  it('the workspace is bound back only when it is in one of them', () => {
    const dirs = ['/tmp', '/dev/shm'];
    expect(privateTmpFor('/m', '/tmp/x/ws', dirs)).toEqual({ mount: '/m', dirs, back: '/tmp/x/ws' });
    expect(privateTmpFor('/m', '/srv/ws', dirs)).toEqual({ mount: '/m', dirs });
    expect(privateTmpFor('/m', '/tmpfoo/ws', dirs)).toEqual({ mount: '/m', dirs });
  });

  it('each is a tmpfs of a quarter of the memory, at most 512 MiB', () => {
    expect(tmpfsSize(1024 * 1024 * 1024)).toBe(`${256 * 1024}k`);
    expect(tmpfsSize(64 * 1024 * 1024 * 1024)).toBe(`${512 * 1024}k`);
  });

  it('mounted as root in the namespace, before timeout and the drop (setpriv); not where unshare drops to the user itself', () => {
    const tmp = { mount: '/m', dirs: ['/tmp', '/dev/shm'], back: '/tmp/ws' };
    const [, args] = inPidNamespace('/u', ['/t', 'x'], undefined, '/s', tmp);
    expect(args.slice(args.lastIndexOf('--pdeathsig'))).toEqual(['--pdeathsig', 'KILL', '--', '/bin/sh', '-c', PRIVATE_TMP, 'crosstalk-tmp', '/m', tmpfsSize(), '/tmp/ws', '/tmp', '/dev/shm', '--', '/t', 'x']);
    expect(inPidNamespace('/u', ['/t'], { uid: 7, gid: 8 }, null, tmp)).toEqual(inPidNamespace('/u', ['/t'], { uid: 7, gid: 8 }, null));
  });

  it('a server that cannot give them says why', () => {
    expect(sharedTmpReason({ reason: 'no' }, true, '/s')).toBe('no');
    expect(sharedTmpReason({ unshare: '/u', tmp: { reason: 'there is no util-linux mount' } }, true, '/s')).toBe('there is no util-linux mount');
    expect(sharedTmpReason({ unshare: '/u', tmp: { mount: '/m' } }, true, null)).toMatch(/no util-linux setpriv/);
    expect(sharedTmpReason({ unshare: '/u', tmp: { mount: '/m' } }, true, '/s')).toBeNull();
  });
});

// Before: commands shared the host's world-writable /tmp. A command made /tmp/tsx-0 (tsx's cache folder for uid 0)
// before root's tsx did; root's `tsx server/worker.ts` then wrote its compiled code in the exec user's folder and ran
// it later from there, after the command had rewritten it: code run as root.
describe.runIf(process.getuid?.() === 0 && 'unshare' in ns && hasMount && hasSetpriv)('a command’s /tmp, /var/tmp and /dev/shm (PID namespace, as root)', () => {
  it('a workspace under /tmp: `..` from it climbs the private /tmp, never the host’s folders around the workspace', async () => {
    const dir = fs.mkdtempSync(path.join('/tmp', 'ct-exec-up-'));
    fs.chmodSync(dir, 0o755);
    fs.writeFileSync(path.join(dir, 'host-only'), 'the host’s', { mode: 0o644 });
    try {
      const config = resolveConfig(parseRawConfig({}), { CROSSTALK_DATA_DIR: path.join(dir, 'data'), CROSSTALK_WORKSPACES: path.join(dir, 'ws') });
      const ws = config.agents[0]!.workspace;
      const ctx = { agent: config.agents[0]!, signal: new AbortController().signal, runId: 'r', sessionKey: 'agent:main:main', callId: 'c' };
      const up = path.relative(ws, dir); // the folders between the workspace and the one that holds host-only
      const r = (await createExecTool().execute({ command: `cd -P ${up} && pwd -P && ls -A; cat host-only 2>/dev/null; echo cat=$?` }, ctx as never)) as { stdout: string };
      // Before, the command's working folder was the host's: `..` walked the host's folders and read host-only.
      expect(r.stdout).toBe([dir, path.relative(dir, ws).split(path.sep)[0], 'cat=1', ''].join('\n'));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('are its own and empty: the host never sees what it writes there, and it never sees what the host put there', async () => {
    const dir = fs.mkdtempSync(path.join('/tmp', 'ct-exec-tmp-'));
    fs.chmodSync(dir, 0o755);
    const tag = `ct-private-${process.pid}-${Date.now()}`;
    const planted = path.join('/tmp', `${tag}-host`);
    fs.writeFileSync(planted, 'planted-by-the-host', { mode: 0o644 });
    const made = ['/tmp', '/var/tmp', '/dev/shm'].map((d) => path.join(d, tag));
    try {
      const config = resolveConfig(parseRawConfig({}), { CROSSTALK_DATA_DIR: path.join(dir, 'data'), CROSSTALK_WORKSPACES: path.join(dir, 'ws') });
      const ws = config.agents[0]!.workspace;
      const ctx = { agent: config.agents[0]!, signal: new AbortController().signal, runId: 'r', sessionKey: 'agent:main:main', callId: 'c' };
      const command = [
        'id -u',
        'ls -A /dev/shm /var/tmp; echo listed',
        'ls -A /tmp',
        `cat ${planted} 2>/dev/null; echo cat=$?`,
        ...made.map((f) => `echo x > ${f} && echo wrote ${f}`),
        'mkdir /tmp/tsx-0 && echo made tsx-0',
        'stat -c %a /tmp /var/tmp /dev/shm',
        'echo here > "$HOME/from-the-command"', // the workspace, in /tmp here, still reached by its path
      ].join('; ');
      const r = (await createExecTool().execute({ command }, ctx as never)) as { status: string; exitCode: number; stdout: string; stderr: string };
      for (const f of made) expect(fs.existsSync(f), f).toBe(false);
      expect(r.stdout).not.toContain('planted-by-the-host');
      expect(r).toMatchObject({ status: 'ok', exitCode: 0, stderr: '' });
      expect(r.stdout).toBe(
        [
          '65534',
          '/dev/shm:', '', '/var/tmp:', 'listed',
          path.relative('/tmp', ws).split(path.sep)[0], // /tmp holds only the way to its workspace
          'cat=1',
          ...made.map((f) => `wrote ${f}`),
          'made tsx-0',
          '1777', '1777', '1777',
          '',
        ].join('\n'),
      );
      expect(fs.readFileSync(path.join(ws, 'from-the-command'), 'utf8')).toBe('here\n');
      // Two commands share nothing there either.
      const next = (await createExecTool().execute({ command: `cat ${made[0]} 2>&1; echo cat=$?` }, ctx as never)) as { stdout: string };
      expect(next.stdout).toMatch(/No such file.*\ncat=1\n$/);
    } finally {
      for (const f of [planted, ...made]) fs.rmSync(f, { force: true });
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
