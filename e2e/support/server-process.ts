// A crosstalk server of a test's own (`node scripts/start.mjs` on its own port and data dir) that it can kill hard and start again.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ServerProcess {
  port: number;
  origin: string;
  dataDir: string;
  /** SIGKILL to its process group: no graceful shutdown, open streams drop, runs in flight stay as they were on disk; its children die too. */
  kill(): Promise<void>;
  /** Starts the server again on the same port and data dir; resolves once it answers HTTP. */
  start(): Promise<void>;
  /** Kills it (if running) and removes its data dir. */
  dispose(): Promise<void>;
  /** The last lines the server printed (for failure messages). */
  output(): string;
  /** The running server's process id (undefined when it is not running). */
  pid(): number | undefined;
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A port nothing listens on now, on loopback. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Waits until the server answers: its room page (loading Next), or with `token` only the gateway (an authorized agents.list). */
async function waitHttp(origin: string, proc: ChildProcess, timeoutMs: number, out: () => string, token?: string): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`server exited early (${proc.exitCode ?? proc.signalCode}):\n${out()}`);
    try {
      const res = token
        ? await fetch(`${origin}/api/gateway`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":1,"method":"agents.list","params":{}}', signal: AbortSignal.timeout(2_000) })
        : await fetch(`${origin}/`, { signal: AbortSignal.timeout(2_000) });
      if (token ? res.status === 200 : res.status < 500) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`server did not answer at ${origin} within ${timeoutMs} ms:\n${out()}`);
}

/** Runs e2e/support/seed-db.ts on a data dir (before its server starts): the seeded sessions the room's tests read. */
async function seedDataDir(dataDir: string): Promise<void> {
  const child = spawn(path.join(ROOT, 'node_modules', '.bin', 'tsx'), ['e2e/support/seed-db.ts', dataDir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (c) => resolve(c));
  });
  if (code !== 0) throw new Error(`seed-db failed (${code}):\n${out}`);
}

/**
 * Starts a server on a free loopback port with a fresh data dir (uses the existing `next build`); with `seed`, the data
 * dir is seeded first (e2e/support/seed-db.ts), as for each Playwright worker's own room server (fixtures.ts). Started
 * means its room page answers (Next loaded), or with `waitFor: 'gateway'` its gateway alone.
 */
export async function startServerProcess(token: string, opts: { startTimeoutMs?: number; env?: Record<string, string>; seed?: boolean; waitFor?: 'page' | 'gateway' } = {}): Promise<ServerProcess> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), opts.seed ? 'crosstalk-e2e-room-' : 'crosstalk-e2e-restart-'));
  if (opts.seed) await seedDataDir(dataDir);
  const timeout = opts.startTimeoutMs ?? 60_000;
  let proc: ChildProcess | null = null;
  let log: string[] = [];
  const output = () => log.slice(-40).join('');

  const start = async () => {
    log = [];
    const child = spawn(process.execPath, ['scripts/start.mjs'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        CROSSTALK_TOKEN: token,
        CROSSTALK_DATA_DIR: dataDir,
        CROSSTALK_WORKSPACES: `${dataDir}-ws`,
        NEXT_TELEMETRY_DISABLED: '1',
        ...opts.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      // A process group of its own: kill() ends the server's descendants (its stdio MCP servers…) with it.
      detached: true,
    });
    const keep = (chunk: Buffer) => {
      log.push(chunk.toString());
      if (log.length > 200) log = log.slice(-100);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    proc = child;
    await waitHttp(origin, child, timeout, output, opts.waitFor === 'gateway' ? token : undefined);
  };

  const kill = async () => {
    const child = proc;
    proc = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // SIGKILL to the whole group (no graceful shutdown, as before): nothing the server started outlives it.
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
    await exited;
  };

  await start();
  return {
    port,
    origin,
    dataDir,
    kill,
    start,
    output,
    pid: () => proc?.pid,
    async dispose() {
      await kill();
      fs.rmSync(dataDir, { recursive: true, force: true });
      fs.rmSync(`${dataDir}-ws`, { recursive: true, force: true });
    },
  };
}
