// `npx tsx bench/turn-cpu.ts [--pg URL] [--turns N] [--rounds R] [--prof out.cpuprofile] [--keep] [--pre-sql 'SQL']`: the gateway's CPU per scripted turn, load-independent — an in-process runtime (SQLite, or PostgreSQL in a schema of its own) in the main thread, its HTTP client in a worker thread; main-thread CPU (process.threadCpuUsage) per turn, statements per turn, on PostgreSQL its backends' CPU per turn (/proc), on SQLite the WAL file's largest size and the checkpoints its main connection finished, and optionally a CPU profile of the server thread alone. `--pre-sql` (PostgreSQL) runs SQL in the bench's schema before the turns, for an A/B of a schema change (e.g. `alter table messages disable trigger messages_search_index`).
import crypto from 'node:crypto';
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { createRuntime } from '../server/boot';
import { parseRawConfig, resolveConfig } from '../server/config';
import { serve } from '../server/http/node-server';
import { createLogger } from '../server/logger';
import { pgConnectConfig } from '../server/store/db';
import { createRequire } from 'node:module';
import vm from 'node:vm';
import { BARE_SERVER } from './lib/bare';
import { turnClientSource } from './lib/http';
import { byCaller, type Profile } from './lib/cpu-profile';
import { backendPids, backendTicksSince, ticksNow, withAppName } from './lib/pg-capacity';
import { CLK_TCK } from './lib/proc';
import { dropStoreSchemas } from '../server/testing/pg-test-db';

const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
};

// Statements counted where the drivers run them: better-sqlite3's Statement run/get/all/iterate, node-postgres's Client.query.
const counts = new Map<string, number>();
const answerMs = new Map<string, number>();
const sqliteMs = new Map<string, number>();
let counting = false;
const shapeOf = (text: string) => text.replace(/\s+/g, ' ').trim().split(' ').slice(0, 3).join(' ').slice(0, 40);
function count(text: string) {
  if (!counting) return;
  const s = shapeOf(text);
  counts.set(s, (counts.get(s) ?? 0) + 1);
}
{
  const proto = pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
  const orig = proto.query;
  proto.query = function (this: unknown, config: unknown, ...rest: unknown[]) {
    const text = typeof config === 'string' ? config : ((config as { text?: string })?.text ?? '');
    count(text);
    if (!counting) return orig.call(this, config, ...rest);
    // Client-side time from sending a statement to its answer, by shape (node-postgres queues a client's queries:
    // with one query at a time per client, as the store runs them, this is the round trip and the server's work).
    const t0 = performance.now();
    const took = () => {
      const s = shapeOf(text);
      answerMs.set(s, (answerMs.get(s) ?? 0) + performance.now() - t0);
    };
    const cb = rest.findIndex((a) => typeof a === 'function');
    if (cb >= 0) {
      const f = rest[cb] as (...a: unknown[]) => unknown;
      rest[cb] = (...a: unknown[]) => (took(), f(...a));
      return orig.call(this, config, ...rest);
    }
    const r = orig.call(this, config, ...rest) as Promise<unknown> | undefined;
    if (r && typeof r.then === 'function') r.then(took, took);
    return r;
  };
  const sp = (BetterSqlite3 as unknown as { prototype: { prepare: (s: string) => object } }).prototype;
  const prep = sp.prepare;
  // Wrap each prepared statement's methods once (by its class).
  let wrapped = false;
  sp.prepare = function (this: unknown, text: string) {
    const st = prep.call(this, text) as Record<string, unknown> & { source: string };
    if (!wrapped) {
      wrapped = true;
      const cls = Object.getPrototypeOf(st) as Record<string, (...a: unknown[]) => unknown>;
      for (const m of ['run', 'get', 'all', 'iterate']) {
        const f = cls[m]!;
        cls[m] = function (this: { source: string }, ...a: unknown[]) {
          count(this.source);
          if (!counting) return f.apply(this, a);
          // SQLite runs a statement in the calling thread: this is the statement's own time, by shape.
          const t0 = performance.now();
          try {
            return f.apply(this, a);
          } finally {
            const sh = shapeOf(this.source);
            sqliteMs.set(sh, (sqliteMs.get(sh) ?? 0) + performance.now() - t0);
          }
        };
      }
    }
    return st;
  };
}

const CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
${turnClientSource('workerData.url', 'workerData.token')}
parentPort.on('message', async (m) => {
  try {
    if (m.kind === 'seq') for (let i = 0; i < m.n; i++) await turn(m.key, 'hello ' + i);
    else for (let r = 0; r < m.n; r++) await Promise.all(Array.from({ length: 50 }, (_, i) => turn(m.key + '-' + r + '-' + i, 'hello ' + i)));
    parentPort.postMessage({ ok: true });
  } catch (e) { parentPort.postMessage({ ok: false, error: String(e && e.stack || e) }); }
});
`;

/** The floor's server, run in this thread; its url. */
function startBareHere(token: string): Promise<{ url: string; close(): Promise<void> }> {
  return new Promise((resolve) => {
    const servers: import('node:http').Server[] = [];
    const req = createRequire(import.meta.url);
    const require = (m: string) => {
      const mod = req(m);
      if (m !== 'node:http') return mod;
      return { ...mod, createServer: (...a: unknown[]) => { const s = mod.createServer(...a); servers.push(s); return s; } };
    };
    const console = { log: (port: string) => resolve({ url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((r) => servers[0]!.close(() => r())) }) };
    vm.runInThisContext(`(function (require, process, console) {${BARE_SERVER}})`)(require, { env: { BARE_TOKEN: token } }, console);
  });
}

const cpuMs = () => {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
};
const sysMs = () => process.threadCpuUsage().system / 1000;

async function main(): Promise<void> {
  const pgUrl = arg('pg');
  const turns = Number(arg('turns') ?? 400);
  const rounds = Number(arg('rounds') ?? 8);
  const profOut = arg('prof');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-turncpu-'));
  const schema = `bench_${crypto.randomBytes(4).toString('hex')}`;
  const env: Record<string, string> = { CROSSTALK_DATA_DIR: dir, CROSSTALK_WORKSPACES: `${dir}-ws` };
  const app = `turncpu_${schema}`;
  if (pgUrl) env.DATABASE_URL = withAppName(pgUrl, app);
  const bare = process.argv.includes('--bare');
  // --bare: the floor (bench/lib/bare.ts's server) in this thread instead of the gateway.
  const rt = bare ? undefined : await createRuntime({ config: resolveConfig(parseRawConfig({}), env), log: createLogger('warn'), ...(pgUrl ? { pgSchema: schema } : {}) });
  const served = rt ? await serve(rt) : await startBareHere('bare-token');
  const preSql = arg('pre-sql');
  if (pgUrl && preSql) {
    const c = new pg.Client(pgConnectConfig(pgUrl));
    await c.connect();
    await c.query(`set search_path to ${schema}; ${preSql}`);
    await c.end();
  }
  // SQLite: the WAL file's largest size (looked at every 100 ms), and the checkpoints the main connection finished.
  const walFile = fs.readdirSync(dir).map((f) => path.join(dir, f)).find((f) => f.endsWith('.sqlite-wal'));
  let walMax = 0;
  const walWatch = setInterval(() => {
    if (walFile) fs.stat(walFile, (err, st) => void (!err && (walMax = Math.max(walMax, st.size))));
  }, 100);
  const worker = new Worker(CLIENT, { eval: true, workerData: { url: new URL('/api/gateway', served.url).toString(), token: rt?.token ?? 'bare-token' } });
  const ask = (m: { kind: 'seq' | 'conc'; n: number; key: string }) =>
    new Promise<void>((resolve, reject) => {
      worker.once('message', (r: { ok: boolean; error?: string }) => (r.ok ? resolve() : reject(new Error(r.error))));
      worker.postMessage(m);
    });
  try {
    await ask({ kind: 'seq', n: 50, key: 'agent:main:warm' });
    await ask({ kind: 'conc', n: 2, key: 'agent:main:warmc' });
    // Background (timers, sweeps) over two idle seconds after one to settle, subtracted per phase by its wall time.
    await new Promise((r) => setTimeout(r, 1000));
    const i0 = cpuMs();
    const iw = performance.now();
    await new Promise((r) => setTimeout(r, 2000));
    const idlePerMs = (cpuMs() - i0) / (performance.now() - iw);
    let session: Session | undefined;
    if (profOut) {
      session = new Session();
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 100 });
      await session.post('Profiler.start');
    }
    const phase = async (label: string, m: { kind: 'seq' | 'conc'; n: number; key: string }, n: number) => {
      counts.clear();
      sqliteMs.clear();
      answerMs.clear();
      counting = true;
      const b0 = pgUrl ? ticksNow(await backendPids(pgUrl, app)) : undefined;
      const c0 = cpuMs();
      const s0 = sysMs();
      const w0 = performance.now();
      await ask(m);
      await rt?.store.foldsSettled(); // the runs' delta folds (queued off the turn's path) count to the phase
      const wall = performance.now() - w0;
      const raw = cpuMs() - c0;
      const sys = sysMs() - s0;
      const cpu = raw - idlePerMs * wall;
      counting = false;
      // The backends' CPU (/proc, clock ticks), the idle background not taken off.
      const pgMs = b0 ? ((await backendTicksSince(pgUrl!, app, b0)) * 1000) / CLK_TCK : undefined;
      const stmts = [...counts.values()].reduce((a, b) => a + b, 0);
      const shapes = [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12).map(([s, k]) => `${(k / n).toFixed(2)}× ${s}${answerMs.has(s) ? ` (sent to answered ${(answerMs.get(s)! / k).toFixed(3)} ms each)` : ''}${sqliteMs.has(s) ? ` (${((sqliteMs.get(s)! / k) * 1000).toFixed(1)} µs each, ${(sqliteMs.get(s)! / n).toFixed(3)} ms/turn)` : ''}`);
      console.log(`${label}: ${n} turns, server-thread CPU ${(cpu / n).toFixed(3)} ms/turn (${(raw / n).toFixed(3)} before the idle background is taken off; ${(sys / n).toFixed(3)} of it in the kernel), wall ${(wall / n).toFixed(3)} ms/turn, statements ${(stmts / n).toFixed(2)}/turn${pgMs === undefined ? '' : `, PostgreSQL backends' CPU ${(pgMs / n).toFixed(3)} ms/turn`}`);
      console.log(`  ${shapes.join('\n  ')}`);
    };
    await phase('sequential (one session)', { kind: 'seq', n: turns, key: 'agent:main:seq' }, turns);
    if (rounds > 0) await phase('50 concurrent sessions', { kind: 'conc', n: rounds, key: 'agent:main:conc' }, rounds * 50);
    const checkpointer = (rt?.store as unknown as { handle?: { walCheckpointer?: { finished: number } } } | undefined)?.handle?.walCheckpointer;
    if (walFile) console.log(`WAL file at most ${(walMax / 1048576).toFixed(1)} MiB; checkpoints finished on the main connection: ${checkpointer?.finished ?? 0}`);
    console.log(`${bare ? 'the floor (bare node:http)' : `store ${pgUrl ? 'postgres' : 'sqlite'}`}, idle background ${(idlePerMs * 1000).toFixed(1)} ms CPU/s, load ${os.loadavg().map((v) => v.toFixed(1)).join(' ')}`);
    if (session) {
      const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
      session.disconnect();
      fs.writeFileSync(profOut!, JSON.stringify(profile));
      const n = turns + rounds * 50;
      console.log(`profile ${profOut}; by caller (native and node: frames charged to the nearest project/package frame), ms per turn:`);
      for (const [name, us] of byCaller(profile).slice(0, 40)) console.log(`  ${(us / 1000 / n).toFixed(4)}  ${name}`);
      console.log('inclusive (every project/package frame on the stack), ms per turn:');
      for (const [name, us] of byCaller(profile, { inclusive: true }).slice(0, 60)) console.log(`  ${(us / 1000 / n).toFixed(4)}  ${name}`);
    }
  } finally {
    clearInterval(walWatch);
    await worker.terminate();
    await served.close();
    await rt?.close();
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(`${dir}-ws`, { recursive: true, force: true });
    if (pgUrl && !process.argv.includes('--keep')) {
      await dropStoreSchemas(pgUrl, schema);
    }
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error((e as Error).stack ?? e);
    process.exit(1);
  },
);
