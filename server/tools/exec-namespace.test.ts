// exec's PID namespace probe: used where unshare works as root, and a reason to warn with everywhere else.
import { describe, expect, it } from 'vitest';
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
    expect(inPidNamespace('/u', ['/bin/sh', '-c', 'x'])).toEqual(['/u', ['--pid', '--fork', '--kill-child', '--mount-proc', '--', '/bin/sh', '-c', 'x']]);
    expect(inPidNamespace('/u', ['/bin/sh'], { uid: 7, gid: 8 })[1]).toEqual(['--pid', '--fork', '--kill-child', '--mount-proc', '--setgid', '8', '--setuid', '7', '--', '/bin/sh']);
  });
});
