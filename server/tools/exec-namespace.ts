// exec's own PID namespace (util-linux unshare): as root, a command runs under the first process of a namespace of its
// own, so whatever ends that process (the shell's exit, the deadline's `timeout`, also after the gateway is gone) the
// kernel ends everything the command started — setsid or not, its marker fd closed or not — and the command's /proc
// shows its own processes only.
import { execFile } from 'node:child_process';
import { systemBinary } from '../system-binary';

/** unshare's flags: a PID namespace whose first process is forked (and killed with unshare), with its own /proc. */
const FLAGS = ['--pid', '--fork', '--kill-child', '--mount-proc'];

export type PidNamespace = { unshare: string } | { reason: string };

let probe: Promise<PidNamespace> | undefined;

/**
 * Whether commands get a PID namespace here, found out once: the server runs as root, util-linux's unshare is there,
 * and the kernel and the container (its seccomp profile, CAP_SYS_ADMIN) allow it — `unshare … /bin/true` succeeds.
 */
export function pidNamespace(): Promise<PidNamespace> {
  return (probe ??= probePidNamespace(systemBinary('unshare'), process.getuid?.()));
}

/** The probe itself: `unshare` as found (null: missing), the server's uid. */
export function probePidNamespace(unshare: string | null, uid: number | undefined): Promise<PidNamespace> {
  return new Promise((resolve) => {
    if (uid !== 0) return resolve({ reason: 'the server does not run as root' });
    if (!unshare) return resolve({ reason: 'there is no util-linux unshare' });
    execFile(unshare, [...FLAGS, '--', '/bin/true'], { timeout: 10_000 }, (err, _out, stderr) => {
      if (!err) return resolve({ unshare });
      const why = (String(stderr).trim() || err.message).trim().split('\n').pop();
      resolve({ reason: `unshare --pid failed (${why}); a container needs CAP_SYS_ADMIN for it` });
    });
  });
}

/**
 * The command line that runs `argv` in a PID namespace of its own, as uid:gid with no supplementary groups when given.
 * Where util-linux has setpriv (`setpriv` null: not), unshare is started through `setpriv --pdeathsig KILL`, and so is
 * the namespace's first process inside it: when the gateway dies, SIGKILL or not, the kernel kills unshare, then that
 * first process, and with it everything the command started, at once instead of at the command's deadline (before: a
 * command of a killed gateway ran on until `timeout` ended it, up to an hour, its result never read: the re-driven
 * call answers `interrupted`). The inner setpriv is needed because unshare's own --kill-child sets that signal before
 * --setuid, and the kernel clears it when a process changes its user.
 */
export function inPidNamespace(
  unshare: string,
  argv: string[],
  id?: { uid: number; gid: number },
  setpriv: string | null = systemBinary('setpriv'),
): [string, string[]] {
  const ids = id ? ['--setgid', String(id.gid), '--setuid', String(id.uid)] : [];
  if (!setpriv) return [unshare, [...FLAGS, ...ids, '--', ...argv]];
  const withParent = ['--pdeathsig', 'KILL', '--'];
  return [setpriv, [...withParent, unshare, ...FLAGS, ...ids, '--', setpriv, ...withParent, ...argv]];
}
