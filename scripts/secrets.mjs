// Starts the server's process as it must run: its secrets kept out of its environment block (they reach it over an
// inherited pipe instead), and with the C library settings it reads only at start (serverEnv).
//
// /proc/<pid>/environ shows a process's *initial* environment, and deleting from process.env does not change it;
// anything that can read that file (an `exec` command running as the server's own user, for one) would see the
// token, the provider keys and DATABASE_URL. So an entry point (scripts/start.mjs, server/worker.ts) calls
// `launchWithoutSecrets()` first. When its environment holds secrets, the process replaces itself
// (process.execve, same pid) with `/bin/sh`, which runs it again with an environment free of them and the
// secrets as JSON in a here-document on fd 3 (a pipe); the new image reads them into process.env. Where
// process.execve is missing (Node < 22.15) it stays a launcher instead: the server runs as its child with fd 3
// for the secrets and fd 4 as a lifeline, signals forwarded, exit status mirrored. With no secret in the
// environment it re-executes in place only to add what `serverEnv` adds (when it adds anything). Tests start
// servers the launcher's way with spawnWithSecrets.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';

/** The variable naming the fd a server reads its secrets from (set by the launcher, never by hand). */
export const SECRETS_FD_VAR = 'CROSSTALK_SECRETS_FD';
/** The variable naming the fd whose close means the launcher is gone. */
const LIFELINE_FD_VAR = 'CROSSTALK_LIFELINE_FD';

/** Whether an environment variable holds a secret: the gateway token, database URLs, keys, tokens, passwords. */
export function isSecretName(name) {
  return (
    /^(CROSSTALK_TOKEN|DATABASE_URL|PGPASSWORD|OTEL_EXPORTER_OTLP(_TRACES)?_HEADERS)$/.test(name) ||
    /(_DATABASE_URL|_API_KEY|_TOKEN|_SECRET|_PASSWORD|_KEY)$/.test(name)
  );
}

/** An environment split in two: what may sit in a process's environment block, and the secrets. */
export function splitSecrets(env) {
  const rest = {};
  const secrets = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) continue;
    if (isSecretName(k)) secrets[k] = v;
    else rest[k] = v;
  }
  return { env: rest, secrets };
}

/**
 * The environment a server process starts with: the one given, with glibc's malloc arenas capped at 2
 * (`MALLOC_ARENA_MAX`) on Linux unless it is set. glibc gives each thread that allocates an arena of its own, up to
 * 8 per core, and a freed block stays in its arena: V8's compiler and GC threads and libuv's pool left ~10 MB of
 * such memory in the server after a burst of turns (bench/memory-after-load.ts). Returns `env` itself when nothing
 * is added. glibc reads the variable once, at start, so it must be in the environment the process starts with.
 */
export function serverEnv(env) {
  if (process.platform !== 'linux' || env.MALLOC_ARENA_MAX !== undefined) return env;
  return { ...env, MALLOC_ARENA_MAX: '2' };
}

/**
 * In a server started with `CROSSTALK_SECRETS_FD`: reads the secrets from that fd into process.env (which the
 * environ file does not show) and closes it. Returns whether it did. With `CROSSTALK_LIFELINE_FD` (a launcher
 * that stays), the server ends at once when that fd closes — the launcher is gone, even by SIGKILL, which it
 * cannot forward — rather than live on orphaned, holding the port and the data dir.
 */
export function receiveSecrets() {
  const raw = process.env[SECRETS_FD_VAR];
  if (!raw) return false;
  const lifeline = process.env[LIFELINE_FD_VAR];
  delete process.env[SECRETS_FD_VAR];
  delete process.env[LIFELINE_FD_VAR];
  const fd = Number(raw);
  const secrets = JSON.parse(fs.readFileSync(fd, 'utf8') || '{}');
  fs.closeSync(fd);
  for (const [k, v] of Object.entries(secrets)) if (typeof v === 'string') process.env[k] = v;
  if (lifeline) {
    const line = new net.Socket({ fd: Number(lifeline), readable: true, writable: false });
    line.on('data', () => {});
    line.on('error', () => {});
    line.on('close', () => process.exit(1));
    line.unref();
  }
  return true;
}

/**
 * Spawns `command args` with the secrets of `env` removed from its environment and written to its fd 3; its fd 4
 * stays open while this process lives (see receiveSecrets).
 */
export function spawnWithSecrets(command, args, { env = process.env, stdio = ['inherit', 'inherit', 'inherit'], ...options } = {}) {
  const split = splitSecrets(env);
  const child = spawn(command, args, { ...options, env: { ...serverEnv(split.env), [SECRETS_FD_VAR]: '3', [LIFELINE_FD_VAR]: '4' }, stdio: [...stdio.slice(0, 3), 'pipe', 'pipe'] });
  child.stdio[3].on('error', () => {}); // a child that died before reading
  child.stdio[3].end(JSON.stringify(split.secrets));
  child.stdio[4].on('error', () => {});
  child.stdio[4].unref?.();
  return child;
}

/**
 * The entry point's first call. In the server (started by a launcher) it takes the secrets from the pipe and
 * returns. In a process whose environment holds no secret it returns. Otherwise this process becomes the
 * launcher: it starts itself again without the secrets in its environment, and never returns.
 */
export async function launchWithoutSecrets() {
  if (receiveSecrets()) return;
  const split = splitSecrets(process.env);
  const self = [process.execPath, ...process.execArgv, ...process.argv.slice(1)];
  if (Object.keys(split.secrets).length === 0) {
    // No secret to hand over: re-executed in place only for what the C library reads at start (serverEnv).
    const env = serverEnv(split.env);
    if (env !== split.env && typeof process.execve === 'function') {
      try {
        process.execve(process.execPath, self, env);
      } catch {
        // runs on as it is: the defaults are a saving, not a need
      }
    }
    return;
  }
  if (typeof process.execve === 'function' && fs.existsSync('/bin/sh')) {
    // The JSON sits in the shell's environment for the instant before its own exec replaces that block; the
    // shell variable `s` is not exported, so the server's environment holds none of it.
    const script = 's=$CROSSTALK_SECRETS_JSON; unset CROSSTALK_SECRETS_JSON; exec "$@" 3<<CROSSTALK_EOF\n$s\nCROSSTALK_EOF\n';
    try {
      process.execve('/bin/sh', ['sh', '-c', script, 'crosstalk', ...self], { ...serverEnv(split.env), [SECRETS_FD_VAR]: '3', CROSSTALK_SECRETS_JSON: JSON.stringify(split.secrets) });
    } catch (e) {
      console.error(`crosstalk: cannot re-execute without the secrets in the environment (${e.message}); starting the server as a child`);
    }
  }
  // Its own process group: a terminal's Ctrl+C reaches the launcher alone, which forwards it once.
  const child = spawnWithSecrets(self[0], self.slice(1), { detached: true });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      if (child.exitCode === null && child.signalCode === null) child.kill(sig);
    });
  }
  child.on('error', (e) => {
    console.error(`crosstalk: cannot start the server: ${e.message}`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => process.exit(signal ? 128 + (os.constants.signals[signal] ?? 0) : (code ?? 1)));
  await new Promise(() => {}); // the child is the server; this process only waits for it
}
