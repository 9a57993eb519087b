// Launching a stdio MCP server so that it dies with the gateway (Linux: setpriv's parent-death signal), even on SIGKILL or OOM.
import fs from 'node:fs';
import path from 'node:path';

let setpriv: string | null | undefined;

/** setpriv (util-linux) on Linux, looked up once; null elsewhere or when it is not installed. */
function findSetpriv(): string | null {
  if (setpriv !== undefined) return setpriv;
  setpriv = null;
  if (process.platform !== 'linux') return setpriv;
  for (const dir of ['/usr/bin', '/bin', '/usr/sbin', '/sbin', ...(process.env.PATH ?? '').split(path.delimiter)]) {
    const p = path.join(dir || '.', 'setpriv');
    if (path.isAbsolute(p) && executable(p)) return (setpriv = p);
  }
  return setpriv;
}

function executable(p: string): boolean {
  try {
    return fs.statSync(p).isFile() && (fs.accessSync(p, fs.constants.X_OK), true);
  } catch {
    return false;
  }
}

/** Whether `command` resolves the way spawn (execvp) would: a path with a slash as it is (from cwd), a bare name on PATH. */
function resolvable(command: string, pathVar: string | undefined, cwd: string): boolean {
  if (command.includes('/')) return executable(path.resolve(cwd, command));
  return (pathVar ?? '').split(path.delimiter).some((dir) => dir && executable(path.join(path.resolve(cwd, dir), command)));
}

/** The error Node's spawn gives for a missing command ("spawn <command> ENOENT"), so a refusal reads the same either way. */
function missingCommand(command: string): NodeJS.ErrnoException {
  const e: NodeJS.ErrnoException = new Error(`spawn ${command} ENOENT`);
  e.code = 'ENOENT';
  e.syscall = `spawn ${command}`;
  e.path = command;
  return e;
}

/**
 * The command and arguments to spawn for a stdio MCP server. On Linux with setpriv, `setpriv --pdeathsig KILL --
 * <command> <args…>`: setpriv sets PR_SET_PDEATHSIG and execs the command in place (same pid, so the SDK's stdin close,
 * SIGTERM and SIGKILL on close reach the server itself), and the kernel SIGKILLs it when the gateway dies, however it
 * dies. The parent-death signal reaches the direct child only: the child of a launcher (`npx …`, a shell script) relies
 * on its stdin closing. A missing command is refused here with spawn's own ENOENT error (setpriv would start, print
 * "failed to execute" and exit 127); `failedExec` reads that line when the command goes missing in between.
 */
export function stdioLaunch(command: string, args: string[], env: Record<string, string>, cwd: string | undefined): { command: string; args: string[] } {
  const sp = findSetpriv();
  if (!sp) return { command, args };
  if (!resolvable(command, env.PATH, cwd ?? process.cwd())) throw missingCommand(command);
  return { command: sp, args: ['--pdeathsig', 'KILL', '--', command, ...args] };
}

/** setpriv's own line when it could not execute the command ("setpriv: failed to execute X: No such file…"), else undefined. */
export function failedExec(stderrLine: string): string | undefined {
  return /^setpriv: failed to execute /.test(stderrLine) ? stderrLine.replace(/^setpriv: /, '') : undefined;
}

