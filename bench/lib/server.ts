// Starts the built crosstalk server through scripts/start.mjs on a free loopback port and stops it again.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RpcClient } from './http';
import { treeRss, type TreeRss } from './proc';
import { sleep } from './stats';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The node flags `npm start` passes (package.json `scripts.start`, e.g. `--max-semi-space-size=4`), so the bench
 * measures exactly what `npm start` runs.
 */
export function startScriptNodeFlags(root = repoRoot): string[] {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  const m = /^node\s+(.*?)\s*scripts\/start\.mjs\b/.exec(pkg.scripts?.start ?? '');
  return m?.[1] ? m[1].split(/\s+/).filter(Boolean) : [];
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface StartOptions {
  dataDir: string;
  token: string;
  /** How scripts/start.mjs runs Next: in its own process (default) or as a child. */
  mode?: 'inprocess' | 'spawn';
  /** Working directory of the server (keeps a stray ./crosstalk.config.json out). */
  cwd: string;
  readyTimeoutMs?: number;
  env?: Record<string, string>;
  /** Extra node flags for the server process, e.g. ['--cpu-prof'] when profiling. */
  nodeArgs?: string[];
  /** Another checkout to start instead of this one (e.g. the last Node 20 commit), and the node binary to run it with. */
  root?: string;
  nodePath?: string;
  /** CPUs the server and everything it starts may run on (`taskset -c`, e.g. '0'), as if it had a machine of its own. */
  cpus?: string;
}

export interface ServerHandle {
  pid: number;
  port: number;
  baseUrl: string;
  token: string;
  /** Spawn → first successful authorized request. */
  readyMs: number;
  rss(): TreeRss;
  /** Everything the server printed so far (capped). */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Server settings a bench passes on from its own environment, for A/B runs: the SQLite loop share
 * (server/store/loop-share.ts), glibc's malloc arenas (`MALLOC_ARENA_MAX`, which `npm start` caps at 2) and the helper
 * threads' nice value (`CROSSTALK_HELPER_NICE`, scripts/thread-priority.mjs).
 */
export function benchEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of ['CROSSTALK_SQLITE_TURN_MS', 'MALLOC_ARENA_MAX', 'CROSSTALK_HELPER_NICE']) if (process.env[k]) out[k] = process.env[k]!;
  return out;
}

/** Spawns `node scripts/start.mjs` and polls an authorized `agents.list` until it answers. */
export async function startServer(opts: StartOptions): Promise<ServerHandle> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LANG: process.env.LANG ?? 'C.UTF-8',
    HOST: '127.0.0.1',
    PORT: String(port),
    CROSSTALK_DATA_DIR: opts.dataDir,
    CROSSTALK_WORKSPACES: `${opts.dataDir}-ws`,
    CROSSTALK_TOKEN: opts.token,
    NEXT_TELEMETRY_DISABLED: '1',
    ...(opts.mode === 'spawn' ? { CROSSTALK_START_MODE: 'spawn' } : {}),
    ...benchEnv(),
    ...opts.env,
  };
  let out = '';
  const logTo = process.env.BENCH_SERVER_LOG; // a file that gets all the server's output (e.g. with --node-arg=--trace-gc)
  const keep = (chunk: Buffer) => {
    if (logTo) fs.appendFileSync(logTo, chunk);
    out += chunk.toString('utf8');
    if (out.length > 64_000) out = out.slice(-64_000);
  };
  const t0 = performance.now();
  const root = opts.root ?? repoRoot;
  const node = opts.nodePath ?? process.execPath;
  const args = [...startScriptNodeFlags(root), ...(opts.nodeArgs ?? []), path.join(root, 'scripts', 'start.mjs')];
  // taskset execs the server in its own place (same pid), and every process and thread it starts inherits the CPUs.
  const child: ChildProcess = spawn(opts.cpus ? 'taskset' : node, opts.cpus ? ['-c', opts.cpus, node, ...args] : args, {
    cwd: opts.cwd,
    env: env as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let exited = false;
  const exitPromise = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );

  const rpc = new RpcClient({ baseUrl, token: opts.token, timeoutMs: 10_000 });
  const deadline = t0 + (opts.readyTimeoutMs ?? 60_000);
  let readyMs = NaN;
  try {
    while (performance.now() < deadline) {
      if (exited) throw new Error(`server exited before it was ready (exit ${child.exitCode}):\n${out}`);
      try {
        await rpc.call('agents.list', {});
        readyMs = performance.now() - t0;
        break;
      } catch {
        await sleep(10);
      }
    }
    if (!Number.isFinite(readyMs)) throw new Error(`server not ready within ${opts.readyTimeoutMs ?? 60_000} ms:\n${out}`);
  } catch (e) {
    child.kill('SIGKILL');
    await exitPromise;
    throw e;
  } finally {
    rpc.close();
  }

  const pid = child.pid!;
  return {
    pid,
    port,
    baseUrl,
    token: opts.token,
    readyMs,
    rss: () => treeRss(pid),
    output: () => out,
    async stop() {
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exitPromise;
      clearTimeout(timer);
    },
  };
}

/** A fresh, empty directory under the OS temp dir. */
export function makeTempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/**
 * Waits until the server has warmed the room's API (scripts/start.mjs `warmRoom`, ~1 s after ready: its module loads
 * once, then stays), then half a second; at most 10 s. Idle RSS and steady-state figures are read after it.
 */
export async function afterWarm(h: ServerHandle): Promise<void> {
  for (let t = 0; t < 10_000 && !/room's API (not )?warmed/.test(h.output()); t += 100) await sleep(100);
  await sleep(500);
}
