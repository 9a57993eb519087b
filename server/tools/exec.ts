// exec: runs a shell command in the agent's workspace folder, output capped; the canonical approval case. Not a sandbox:
// as root it runs the command as an unprivileged user (exec-isolation.ts) in a PID namespace of its own with its own
// /tmp, /var/tmp and /dev/shm (exec-namespace.ts), and ends its whole process tree (exec-tree.ts). It starts with only
// fds 0-3 open and umask 077 (closeInheritedFds).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { toolError } from '../errors';
import type { ToolDef } from './types';
import { described } from './describe';
import { blockedFor, execIdentity, mkdirAsUser, mkdirFor } from './exec-isolation';
import { ProcessTree } from './exec-tree';
import { realPrefix } from '../real-path';
import { isExecutableFile, systemBinary } from '../system-binary';
import { inPidNamespace, pidNamespace, privateTmpFor, type PrivateTmp } from './exec-namespace';

/** Seconds a command may run when the call names no timeout. */
export const DEFAULT_TIMEOUT_S = 120;

/** Per stream, in bytes of UTF-8. */
export const OUTPUT_CAP = 64 * 1024;

/**
 * The shell runs under coreutils' `timeout` (found at the first command) with a deadline of its own, `timeoutSeconds` plus
 * TIMEOUT_GRACE_S, after which it SIGKILLs the command's process group. The gateway's own timer ends the command first
 * and reports the timeout; `timeout` holds the deadline when the gateway is gone (SIGKILL, OOM), which used to leave
 * the command running for ever, reparented to init. null where it is missing: the gateway's timer alone, as before.
 */
/** How long after the gateway's deadline `timeout` kills the command itself (only when the gateway did not). */
export const TIMEOUT_GRACE_S = 2;

/**
 * The shell's command line: `sh -c command`, under `timeout` where there is one, and in a PID namespace of its own
 * when `ns` names unshare, run as `ns.id` when given, with its own /tmp, /var/tmp and /dev/shm (`ns.tmp`, mounted as
 * root before the drop; not where unshare drops to the user itself, without setpriv). The drop to that user comes
 * after `timeout`, by util-linux's setpriv: the namespace's first process (`timeout`) stays root's, so the command
 * cannot ptrace it, nor signal it. When unshare dropped to the user itself, `timeout` was the exec user's too: a
 * command attached to it and made it ignore its deadline, leave its session and close the marker fd, and its processes
 * outlived the call, the deadline and the gateway (probe R). Without setpriv, unshare drops to the user as before.
 */
export function shellArgv(
  command: string,
  limitS: number,
  ns?: { unshare: string; id?: { uid: number; gid: number }; tmp?: PrivateTmp },
  setpriv: string | null = systemBinary('setpriv'),
): [string, string[]] {
  const timeout = systemBinary('timeout');
  const dropInside = ns?.id && setpriv ? ns.id : undefined;
  const sh = ['/bin/sh', '-c', command];
  const asUser = dropInside ? [setpriv!, '--regid', String(dropInside.gid), '--reuid', String(dropInside.uid), '--clear-groups', '--', ...sh] : sh;
  const argv = timeout ? [timeout, '-s', 'KILL', `${limitS + TIMEOUT_GRACE_S}s`, ...asUser] : asUser;
  return ns ? inPidNamespace(ns.unshare, argv, dropInside ? undefined : ns.id, setpriv, ns.tmp) : [argv[0]!, argv.slice(1)];
}

/**
 * The script every command line starts through (as `shell -c CLOSE_FDS crosstalk-exec file args…`): it closes every fd
 * above 3, then execs `file args…` in its place (same pid: the process tree and the deadline are as before). Node opens
 * its own files close-on-exec (and marks inherited fds up to 15 so at start), but not the higher fds the server
 * inherited from whatever started it (a shell's `200<secret`, a supervisor's or CI runner's pipe), and every command
 * got them, as the exec user too. fd 3 is the command's marker (exec-tree.ts) and stays. /proc/self/fd names the open
 * fds; without /proc, 4 up to the fd limit (at most 1024) are closed. dash closes one-digit fds only (`exec 12>&-` runs
 * a command named 12), so bash runs it where there is one; a shell that cannot close an open fd above 9 fails the
 * command (exit 126) rather than leak it. It also sets the command's oom_score_adj to 1000 (inherited by all it
 * starts): commands share the gateway's memory, and when it runs out the kernel's OOM killer ends a command before the
 * gateway (raising one's own score needs no privilege; where /proc is missing, nothing changes). And umask 077: what
 * a command creates is its user's alone (with 022, an agent's files were readable by other agents' exec users).
 */
export const CLOSE_FDS = `multi=
closesMulti() {
  [ -n "$multi" ] || if (PATH=/dev/null; exec 10>&-) 2>/dev/null; then multi=1; else multi=0; fi
  [ "$multi" = 1 ]
}
if [ -d /proc/self/fd ]; then
  for f in /proc/self/fd/*; do
    n=\${f##*/}
    case $n in
      [0-3]) ;;
      [4-9]) eval "exec $n>&-" ;;
      *)
        closesMulti || { echo "$0: cannot close the inherited fd $n: this shell closes fds 0-9 only" >&2; exit 126; }
        eval "exec $n>&-" ;;
    esac
  done
else
  n=4
  max=9
  if closesMulti; then
    max=$(ulimit -n)
    case $max in ''|*[!0-9]*) max=1024 ;; esac
    [ "$max" -le 1024 ] || max=1024
    max=$((max - 1))
  fi
  while [ "$n" -le "$max" ]; do eval "exec $n>&-"; n=$((n + 1)); done
fi
{ echo 1000 > /proc/self/oom_score_adj; } 2>/dev/null
umask 077
exec "$@"`;

let closingShell: string | undefined;

/** `argv` (file first) started through CLOSE_FDS: by bash where there is one (-p: no BASH_ENV, no functions from the environment), else /bin/sh. */
export function closeInheritedFds([file, argv]: [string, string[]], shell = (closingShell ??= ['/usr/bin/bash', '/bin/bash'].find(isExecutableFile) ?? '/bin/sh')): [string, string[]] {
  const opts = path.basename(shell) === 'bash' ? ['-p'] : [];
  return [shell, [...opts, '-c', CLOSE_FDS, 'crosstalk-exec', file, ...argv]];
}

/** After the shell exits, how long output still in the pipes may take to arrive (a grandchild may hold them open forever). */
const PIPE_DRAIN_MS = 100;

const input = described(
  z.object({
    command: z.string().min(1).max(16_384),
    cwd: z.string().max(4096).optional(),
    timeoutSeconds: z.number().min(1).max(3600).optional(),
  }),
  {
    command: 'The shell command line to run (sh -c), e.g. "ls -la".',
    cwd: 'Folder to run in, relative to your workspace folder; must stay inside it. Default: the workspace (or the delegate\'s cwd).',
    timeoutSeconds: `Kill the command (and everything it started) after this many seconds (1-3600). Default ${DEFAULT_TIMEOUT_S}.`,
  },
);

/** The environment `exec` gets: PATH, HOME, LANG and the names the agent's config lists; never the server's secrets. */
export function execEnv(names: readonly string[], from: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env = {} as NodeJS.ProcessEnv;
  for (const name of ['PATH', 'HOME', 'LANG', ...names]) {
    const v = from[name];
    if (v !== undefined) env[name] = v;
  }
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  return env;
}

/** The longest prefix of `buf` of at most `cap` bytes that does not split a UTF-8 character. */
export function utf8Prefix(buf: Buffer, cap: number): Buffer {
  if (buf.length <= cap) return buf;
  let end = cap;
  // Step back over continuation bytes (10xxxxxx) to the lead byte of the last character, and drop it when it does not fit.
  let i = end - 1;
  while (i > 0 && (buf[i]! & 0xc0) === 0x80) i--;
  const lead = buf[i]!;
  const len = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (i + len > end) end = i;
  return buf.subarray(0, end);
}

/** Collects one stream's bytes up to the cap. */
class Capped {
  private chunks: Buffer[] = [];
  private size = 0;
  truncated = false;
  push(c: Buffer) {
    if (this.size >= OUTPUT_CAP + 4) {
      this.truncated = true;
      return;
    }
    this.chunks.push(c);
    this.size += c.length;
  }
  text(): string {
    const all = Buffer.concat(this.chunks);
    if (all.length > OUTPUT_CAP) this.truncated = true;
    return utf8Prefix(all, OUTPUT_CAP).toString('utf8');
  }
}

export function createExecTool(): ToolDef<z.infer<typeof input>> {
  return {
    name: 'exec',
    description: `Run a shell command in your workspace folder. Returns {status, exitCode, stdout, stderr}; output is capped at 64 KiB per stream; the command and everything it started are killed after timeoutSeconds (default ${DEFAULT_TIMEOUT_S}), and the timeout error carries the output printed until then. Needs approval by default.`,
    inputSchema: input,
    async execute({ command, cwd, timeoutSeconds }, ctx) {
      const id = execIdentity(ctx.agent.execUser ?? 'nobody');
      const root = ctx.agent.workspace;
      mkdirFor(root, id);
      const realRoot = fs.realpathSync(/* turbopackIgnore: true */ root);
      // A delegate started with a `cwd` works there by default; an explicit cwd is relative to that.
      const base = path.resolve(/* turbopackIgnore: true */ root, ctx.sessionCwd ?? '.');
      const dir = path.resolve(/* turbopackIgnore: true */ base, cwd ?? '.');
      // Inside by name and by real path: a symlink in the workspace does not lead out of it.
      const within = (r: string, d: string) => d === r || d.startsWith(r + path.sep);
      const inside = (d: string) => within(root, d) && within(realRoot, realPrefix(d));
      if (!inside(base) || !inside(dir)) return toolError('forbidden', 'cwd must stay inside the workspace');
      // Made as the exec user (a command may rename the folders on its way meanwhile), and checked again once made.
      if (!cwd && ctx.sessionCwd && !fs.existsSync(/* turbopackIgnore: true */ base) && (!mkdirAsUser(base, id) || !inside(base))) {
        return toolError('forbidden', `cwd ${ctx.sessionCwd} could not be made inside the workspace`);
      }
      if (!fs.existsSync(/* turbopackIgnore: true */ dir)) return toolError('invalid_request', `cwd ${cwd} does not exist`);
      const blocked = id.isolated ? blockedFor(dir, id, 1) : null;
      if (blocked) return toolError('forbidden', `exec runs as ${id.isolated && id.user}, who cannot enter ${blocked}`);
      const limitS = timeoutSeconds ?? DEFAULT_TIMEOUT_S;
      const env = execEnv(ctx.agent.execEnv ?? []);
      if (id.isolated) env.HOME = realRoot; // the server's HOME is not the user's to read
      const ns = await pidNamespace();
      // Interrupted while that was found out (the first command waits for the probe): it never starts.
      if (ctx.signal.aborted) return toolError('interrupted', 'run interrupted');
      const namespaced = 'unshare' in ns;
      // Its own /tmp, /var/tmp and /dev/shm where the namespace has them (the workspace bound back when it is in one).
      const tmp = namespaced && 'mount' in ns.tmp ? privateTmpFor(ns.tmp.mount, realRoot) : undefined;
      const tree = new ProcessTree(namespaced);
      return new Promise((resolve) => {
        // Its own session and process group; fd 3 marks every process it starts (exec-tree.ts), and no other fd above 2 reaches it.
        let child: ReturnType<typeof spawn>;
        try {
          const user = id.isolated ? { uid: id.uid, gid: id.gid } : undefined;
          // Closed before anything else runs (as root, in the namespace's case): a process of the exec user's that kept
          // them (timeout, the namespace's first process) would hand them to the command (pidfd_getfd, ptrace).
          const [file, argv] = closeInheritedFds(shellArgv(command, limitS, namespaced ? { unshare: ns.unshare, id: user, tmp } : undefined));
          child = spawn(file, argv, {
            cwd: dir,
            env,
            stdio: ['ignore', 'pipe', 'pipe', tree.markerFd],
            detached: true,
            ...(user && !namespaced ? user : {}),
          });
        } catch (e) {
          return void tree.close().then(() => resolve(toolError('internal', `exec failed: ${(e as Error).message}`)));
        }
        if (child.pid) tree.started(child.pid);
        const out = new Capped();
        const err = new Capped();
        child.stdout!.on('data', (c: Buffer) => out.push(c));
        child.stderr!.on('data', (c: Buffer) => err.push(c));
        let timedOut = false;
        let settled = false;
        const timer = setTimeout(() => {
          timedOut = true;
          void tree.kill();
        }, limitS * 1000);
        const onAbort = () => void tree.kill();
        ctx.signal.addEventListener('abort', onAbort, { once: true });
        const settle = (value: unknown) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          ctx.signal.removeEventListener('abort', onAbort);
          void tree.close().then(() => resolve(value)); // whatever the command left running ends with it, first
        };
        child.on('error', (e) => settle(toolError('internal', `exec failed: ${e.message}`)));
        // Settle on the shell's exit, not on the pipes closing: a grandchild (`setsid sleep 600 &`) may hold them.
        child.on('exit', (code, sig) => {
          void tree.kill(); // background jobs, in the group or not
          const finish = () => {
            if (settled) return;
            child.stdout!.destroy();
            child.stderr!.destroy();
            const output = () => {
              const stdout = out.text();
              const stderr = err.text();
              return { stdout, stderr, ...(out.truncated || err.truncated ? { truncated: true } : {}) };
            };
            // What it printed before its deadline, capped the same: the model sees how far it got.
            if (timedOut) return settle({ ...toolError('timeout', `command timed out after ${limitS}s`), ...output() });
            if (ctx.signal.aborted) return settle(toolError('interrupted', 'run interrupted'));
            settle({ status: 'ok', exitCode: code ?? (sig ? 128 : 1), ...output() });
          };
          let pending = 2;
          const closed = () => --pending === 0 && finish();
          child.stdout!.once('close', closed);
          child.stderr!.once('close', closed);
          setTimeout(finish, PIPE_DRAIN_MS).unref();
        });
      });
    },
  };
}
