// exec's own PID namespace (util-linux unshare): as root, a command runs under the first process of a namespace of its
// own, so whatever ends that process (the shell's exit, the deadline's `timeout`, also after the gateway is gone) the
// kernel ends everything the command started — setsid or not, its marker fd closed or not — and the command's /proc
// shows its own processes only. Its mount namespace gives it an empty /tmp, /var/tmp and /dev/shm of its own (tmpfs).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isExecutableFile, systemBinary } from '../system-binary';

/** unshare's flags: a PID namespace whose first process is forked (and killed with unshare), with its own /proc (and so its own mount namespace, propagation private). */
const FLAGS = ['--pid', '--fork', '--kill-child', '--mount-proc'];

/** The folders every user may write (and root's programs use: tsx's cache in /tmp/tsx-0) that a command gets empty and its own. */
export const SHARED_DIRS = ['/tmp', '/var/tmp', '/dev/shm'];

/** Each private folder's size limit (tmpfs, in the command's memory): a quarter of the machine's memory, at most 512 MiB. */
export function tmpfsSize(total = os.totalmem()): string {
  return `${Math.floor(Math.min(512 * 1024 * 1024, total / 4) / 1024)}k`;
}

/**
 * Run as root inside the namespace, before `timeout` and the drop to the exec user (`sh -c PRIVATE_TMP crosstalk-tmp
 * mount size back dir… -- argv…`): mounts an empty tmpfs (mode 1777, nosuid, nodev) on each dir, then execs argv in
 * its place (same pid: the namespace's first process). `back`, when not empty, is the workspace under one of those
 * dirs (a workspace in /tmp): it is opened first and bind-mounted back at its path, so the command still reaches it by
 * name, and the command's working folder (entered on the host's /tmp) is entered again through it, so `..` from
 * there climbs the private folder, never the host's. Any failure fails the command (exit 126) rather than run it on
 * the host's /tmp.
 */
export const PRIVATE_TMP = `mount=$1 size=$2 back=$3
shift 3
fail() { echo "crosstalk-exec: cannot give the command a private $1" >&2; exit 126; }
if [ -n "$back" ]; then exec 9<"$back" || fail "$back"; here=$(pwd -P) || fail "working folder"; fi
while [ "$1" != -- ]; do
  "$mount" -n -t tmpfs -o nosuid,nodev,mode=1777,size="$size" crosstalk-tmp "$1" || fail "$1"
  shift
done
shift
if [ -n "$back" ]; then
  (umask 022; mkdir -p "$back") && "$mount" -n -c --bind /proc/self/fd/9 "$back" || fail "$back"
  exec 9<&-
  # The working folder was entered on the host's /tmp: entered again through the mounts, so \`..\` climbs the private one.
  cd -- "$here" || fail "$here"
fi
exec "$@"`;

/** What a command's private folders need: util-linux's mount, the folders to cover, and the workspace to bind back when it is under one. */
export interface PrivateTmp {
  mount: string;
  dirs: readonly string[];
  back?: string;
}

export type PidNamespace = { unshare: string; tmp: { mount: string } | { reason: string } } | { reason: string };

let probe: Promise<PidNamespace> | undefined;
let sharedDirs: string[] | undefined;

/** SHARED_DIRS as they are here: real paths of the ones that are folders, each once (/var/tmp may be a link to /tmp). */
export function privateDirs(): string[] {
  return (sharedDirs ??= [
    ...new Set(
      SHARED_DIRS.flatMap((d) => {
        try {
          const real = fs.realpathSync(/* turbopackIgnore: true */ d);
          return fs.statSync(/* turbopackIgnore: true */ real).isDirectory() ? [real] : [];
        } catch {
          return [];
        }
      }),
    ),
  ]);
}

/** The private folders for a command whose workspace's real path is `workspace`: it is bound back when it is in one of them. */
export function privateTmpFor(mount: string, workspace: string, dirs: readonly string[] = privateDirs()): PrivateTmp {
  const under = dirs.some((d) => workspace === d || workspace.startsWith(d === path.sep ? d : d + path.sep));
  return { mount, dirs, ...(under ? { back: workspace } : {}) };
}

/**
 * Whether commands get a PID namespace here, found out once: the server runs as root, util-linux's unshare is there,
 * and the kernel and the container (its seccomp profile, CAP_SYS_ADMIN) allow it — `unshare … /bin/true` succeeds;
 * and whether it gets private folders there (util-linux's mount, and a tmpfs mount in it succeeds).
 */
export function pidNamespace(): Promise<PidNamespace> {
  return (probe ??= probePidNamespace(systemBinary('unshare'), process.getuid?.(), ['/usr/bin/mount', '/bin/mount'].find(isExecutableFile) ?? null));
}

function run(file: string, args: string[]): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 10_000 }, (err, _out, stderr) => {
      if (!err) return resolve(null);
      resolve((String(stderr).trim() || err.message).trim().split('\n').pop() ?? err.message);
    });
  });
}

/** The probe itself: `unshare` and `mount` as found (null: missing), the server's uid. */
export async function probePidNamespace(unshare: string | null, uid: number | undefined, mount: string | null = null): Promise<PidNamespace> {
  if (uid !== 0) return { reason: 'the server does not run as root' };
  if (!unshare) return { reason: 'there is no util-linux unshare' };
  const failed = await run(unshare, [...FLAGS, '--', '/bin/true']);
  if (failed !== null) return { reason: `unshare --pid failed (${failed}); a container needs CAP_SYS_ADMIN for it` };
  if (!mount) return { unshare, tmp: { reason: 'there is no util-linux mount' } };
  const dirs = privateDirs();
  const tmpFailed = await run(unshare, [...FLAGS, '--', '/bin/sh', '-c', PRIVATE_TMP, 'crosstalk-tmp', mount, tmpfsSize(), '', ...dirs, '--', '/bin/true']);
  return { unshare, tmp: tmpFailed === null ? { mount } : { reason: `a tmpfs mount in it failed (${tmpFailed})` } };
}

/**
 * The command line that runs `argv` in a PID namespace of its own, as uid:gid with no supplementary groups when given.
 * Where util-linux has setpriv (`setpriv` null: not), unshare is started through `setpriv --pdeathsig KILL`, and so is
 * the namespace's first process inside it: when the gateway dies, SIGKILL or not, the kernel kills unshare, then that
 * first process, and with it everything the command started, at once instead of at the command's deadline (before: a
 * command of a killed gateway ran on until `timeout` ended it, up to an hour, its result never read: the re-driven
 * call answers `interrupted`). The inner setpriv is needed because unshare's own --kill-child sets that signal before
 * --setuid, and the kernel clears it when a process changes its user.
 * With `tmp`, PRIVATE_TMP runs first inside it, as root: not when unshare itself drops to `id` (then nothing in the
 * namespace is root's to mount with).
 */
export function inPidNamespace(
  unshare: string,
  argv: string[],
  id?: { uid: number; gid: number },
  setpriv: string | null = systemBinary('setpriv'),
  tmp?: PrivateTmp,
): [string, string[]] {
  const ids = id ? ['--setgid', String(id.gid), '--setuid', String(id.uid)] : [];
  const inside = tmp && !id ? ['/bin/sh', '-c', PRIVATE_TMP, 'crosstalk-tmp', tmp.mount, tmpfsSize(), tmp.back ?? '', ...tmp.dirs, '--', ...argv] : argv;
  if (!setpriv) return [unshare, [...FLAGS, ...ids, '--', ...inside]];
  const withParent = ['--pdeathsig', 'KILL', '--'];
  return [setpriv, [...withParent, unshare, ...FLAGS, ...ids, '--', setpriv, ...withParent, ...inside]];
}
