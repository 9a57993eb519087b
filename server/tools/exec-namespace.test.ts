// exec's PID namespace probe: used where unshare works as root, and a reason to warn with everywhere else.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRawConfig, resolveConfig } from '../config';
import { createExecTool } from './exec';
import { inPidNamespace, probePidNamespace } from './exec-namespace';

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
