// The PostgreSQL capacity model's measurements: statements and round trips per turn (counted at the client), server CPU per turn (/proc of the backends), turns/s per PostgreSQL core at 1, 2 and 4 gateway processes.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import pg from 'pg';
import { RpcClient, turn } from './http';
import { CLK_TCK, cpuTicks, procStat, processTree } from './proc';
import { makeTempDir, type ServerHandle, startServer } from './server';
import { sleep, summarize, type Summary } from './stats';
import { dropStoreSchemas } from '../../server/testing/pg-test-db';

export interface StatementCount {
  turns: number;
  /** Client `query` calls per turn: each one is a round trip (node-postgres does not pipeline). */
  roundTrips: number;
  /** Of which transaction control (BEGIN / COMMIT / ROLLBACK / SAVEPOINT). */
  txControl: number;
  /** Background statements per second while idle (liveness sweep, LISTEN, job polling), subtracted above. */
  idlePerSecond: number;
  /** The statements of one turn, by their first words, most frequent first. */
  shapes: Array<{ shape: string; perTurn: number }>;
  /** PostgreSQL backend CPU per turn (ms) and the gateway's (ms), from /proc and process.cpuUsage. */
  pgCpuMsPerTurn: number;
  gatewayCpuMsPerTurn: number;
  turn: Summary;
}

let counting: Map<string, number> | null = null;
let patched = false;
function patchClient(): void {
  if (patched) return;
  patched = true;
  const proto = pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
  const orig = proto.query;
  proto.query = function (this: unknown, config: unknown, ...rest: unknown[]) {
    if (counting) {
      const text = typeof config === 'string' ? config : ((config as { text?: string })?.text ?? '');
      const shape = text.replace(/\s+/g, ' ').trim().split(' ').slice(0, 3).join(' ').replace(/"[a-z0-9_]+"\./g, '').slice(0, 48);
      counting.set(shape, (counting.get(shape) ?? 0) + 1);
    }
    return orig.call(this, config, ...rest);
  };
}

export const withAppName = (url: string, app: string) => {
  const u = new URL(url);
  u.searchParams.set('application_name', app);
  return u.toString();
};

/** PostgreSQL backends whose application_name is `app` (our pool's connections, LISTEN included). */
export async function backendPids(url: string, app: string): Promise<number[]> {
  const c = new pg.Client(pgClientConfig(url));
  await c.connect();
  try {
    const r = await c.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [app]);
    return r.rows.map((x) => x.pid);
  } finally {
    await c.end();
  }
}

function pgClientConfig(url: string): pg.ClientConfig {
  const u = new URL(url);
  if (!u.username) u.username = process.env.PGUSER || process.env.USER || os.userInfo().username;
  return { connectionString: u.toString() };
}

/** CPU ticks of each backend now (a backend that is gone is left out). */
export const ticksNow = (pids: number[]) => new Map(pids.flatMap((pid) => {
  const t = procStat(pid)?.ticks;
  return t === undefined ? [] : [[pid, t] as const];
}));

/**
 * Backend CPU ticks used since `before`, over the backends of `app` then and now: a backend opened meanwhile counts
 * whole, one that closed meanwhile counts nothing after `before` (a slight undercount, never negative).
 */
export async function backendTicksSince(url: string, app: string, before: Map<number, number>): Promise<number> {
  const now = ticksNow([...new Set([...before.keys(), ...(await backendPids(url, app))])]);
  let sum = 0;
  for (const [pid, t] of now) sum += Math.max(0, t - (before.get(pid) ?? 0));
  return sum;
}

/**
 * One in-process runtime on PostgreSQL (a schema of its own), served over real HTTP; after warm-up, `turns`
 * sequential scripted turns with every client query counted, and an idle window as long to subtract the background.
 */
export async function pgStatementsPerTurn(pgUrl: string, turns: number): Promise<Record<string, StatementCount>> {
  patchClient();
  const { createRuntime } = await import('../../server/boot');
  const { parseRawConfig, resolveConfig } = await import('../../server/config');
  const { serve } = await import('../../server/http/node-server');
  const { createLogger } = await import('../../server/logger');
  const out: Record<string, StatementCount> = {};
  const app = `ctstmt_${crypto.randomBytes(3).toString('hex')}`;
  const dataDir = makeTempDir('ct-stmt-');
  const schema = `bench_${crypto.randomBytes(4).toString('hex')}`;
  const env = { CROSSTALK_DATA_DIR: dataDir, CROSSTALK_WORKSPACES: `${dataDir}-ws`, DATABASE_URL: withAppName(pgUrl, app) };
  const config = resolveConfig(parseRawConfig({}), env);
  const rt = await createRuntime({ config, log: createLogger('warn'), pgSchema: schema });
  const served = await serve(rt);
  const rpc = new RpcClient({ baseUrl: served.url, token: rt.token });
  try {
    for (let i = 0; i < 30; i++) await turn(rpc, 'agent:main:stmt', `warm ${i}`);
    const pids = await backendPids(pgUrl, app);
    // Idle background first (same length as the turns below, measured after them too).
    counting = new Map();
    const idle0 = performance.now();
    await sleep(2000);
    const idleCount = [...counting.values()].reduce((a, b) => a + b, 0);
    const idlePerSecond = idleCount / ((performance.now() - idle0) / 1000);
    counting = new Map();
    const times: number[] = [];
    const pg0 = ticksNow(pids);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < turns; i++) {
      const s = performance.now();
      await turn(rpc, 'agent:main:stmt', `turn ${i}`);
      times.push(performance.now() - s);
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const pgTicks = await backendTicksSince(pgUrl, app, pg0);
    const counts = counting;
    counting = null;
    const background = idlePerSecond * seconds;
    const total = [...counts.values()].reduce((a, b) => a + b, 0) - background;
    const tx = [...counts.entries()].filter(([k]) => /^(begin|commit|rollback|savepoint|release)/i.test(k)).reduce((a, [, v]) => a + v, 0);
    out.scripted = {
      turns,
      roundTrips: total / turns,
      txControl: tx / turns,
      idlePerSecond,
      shapes: [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 14).map(([shape, n]) => ({ shape, perTurn: n / turns })),
      pgCpuMsPerTurn: ((pgTicks / CLK_TCK) * 1000) / turns,
      // The bench's client runs in this process too: its share is in here (an upper bound for the gateway).
      gatewayCpuMsPerTurn: ((cpu.user + cpu.system) / 1000) / turns,
      turn: summarize(times),
    };
  } finally {
    counting = null;
    rpc.close();
    await served.close();
    await rt.close();
    await dropStoreSchemas(pgUrl, schema);
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(`${dataDir}-ws`, { recursive: true, force: true });
  }
  return out;
}


export interface CapacityPoint {
  processes: number;
  clients: number;
  seconds: number;
  turns: number;
  turnsPerSecond: number;
  pgCpuSeconds: number;
  gatewayCpuSeconds: number;
  /** Turns per second one fully busy PostgreSQL core serves at this mix: turns / PostgreSQL CPU seconds. */
  turnsPerPgCoreSecond: number;
  turnsPerGatewayCoreSecond: number;
  p50: number;
  p95: number;
}

/** N `npm start` processes on one schema; 4 clients in all, each looping turns on a session of its own, for `seconds`. */
export async function pgCapacity(o: { pgUrl: string; token: string; cwd: string; env: Record<string, string>; seconds: number; track: (h: ServerHandle) => () => void }): Promise<CapacityPoint[]> {
  const points: CapacityPoint[] = [];
  for (const n of [1, 2, 4]) {
    const schema = `bench_${crypto.randomBytes(4).toString('hex')}`;
    const app = `ctcap_${crypto.randomBytes(3).toString('hex')}`;
    const env = { ...o.env, CROSSTALK_LOG_LEVEL: 'warn', DATABASE_URL: withAppName(o.pgUrl, app), CROSSTALK_PG_SCHEMA: schema };
    const handles: ServerHandle[] = [];
    const untrack: Array<() => void> = [];
    const dirs: string[] = [];
    const startOne = async () => {
      const dir = makeTempDir('ct-cap-');
      dirs.push(dir);
      const h = await startServer({ dataDir: dir, token: o.token, cwd: o.cwd, env, readyTimeoutMs: 120_000 });
      handles.push(h);
      untrack.push(o.track(h));
    };
    try {
      await startOne(); // migrates
      await Promise.all(Array.from({ length: n - 1 }, startOne));
      const clients = 4;
      const rpcs = Array.from({ length: clients }, (_, i) => new RpcClient({ baseUrl: handles[i % n]!.baseUrl, token: o.token }));
      for (const [i, rpc] of rpcs.entries()) for (let k = 0; k < 10; k++) await turn(rpc, `agent:main:cap-${i}`, `warm ${k}`);
      const pids = await backendPids(o.pgUrl, app);
      const gwPids = handles.flatMap((h) => processTree(h.pid));
      const pg0 = ticksNow(pids);
      const gw0 = cpuTicks(gwPids);
      const times: number[] = [];
      const t0 = performance.now();
      const end = t0 + o.seconds * 1000;
      await Promise.all(
        rpcs.map(async (rpc, i) => {
          for (let k = 0; performance.now() < end; k++) {
            const s = performance.now();
            await turn(rpc, `agent:main:cap-${i}`, `turn ${k}`);
            times.push(performance.now() - s);
          }
        }),
      );
      const wall = (performance.now() - t0) / 1000;
      const pgCpu = (await backendTicksSince(o.pgUrl, app, pg0)) / CLK_TCK;
      const gwCpu = (cpuTicks(gwPids) - gw0) / CLK_TCK;
      for (const r of rpcs) r.close();
      const s = summarize(times);
      points.push({
        processes: n,
        clients,
        seconds: wall,
        turns: times.length,
        turnsPerSecond: times.length / wall,
        pgCpuSeconds: pgCpu,
        gatewayCpuSeconds: gwCpu,
        turnsPerPgCoreSecond: pgCpu > 0 ? times.length / pgCpu : NaN,
        turnsPerGatewayCoreSecond: gwCpu > 0 ? times.length / gwCpu : NaN,
        p50: s.p50,
        p95: s.p95,
      });
    } finally {
      await Promise.all(handles.map((h) => h.stop()));
      for (const u of untrack) u();
      await dropStoreSchemas(o.pgUrl, schema);
      for (const d of dirs) {
        fs.rmSync(d, { recursive: true, force: true });
        fs.rmSync(`${d}-ws`, { recursive: true, force: true });
      }
    }
  }
  return points;
}
