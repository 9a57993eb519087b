// `npx tsx bench/profile-loop.ts sqlite|postgres [sessions] [--stream] [--only=phase,…]`: what holds the gateway's
// event loop over a bench:scale store (seeded with bench/scale-seed-cli.ts, CROSSTALK_SCALE_DIR as bench:scale). Runs
// the headless gateway (server/worker.ts, unbundled sources) with --cpu-prof and bench/lib/loop-probe.mjs, makes the
// reads bench:scale makes (idle, status, sessions.usage, sessions.list and its paging, search, runs.board,
// deliveries.list; with --stream, again while 50 runs stream), and prints each phase's longest gap and every long task
// (≥ LONG ms, default 15) in the profile with the frames it spent its time in, and how much of it the thread was
// not running (descheduled, or blocked in a system call). Figures, never assertions.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Profile } from './lib/cpu-profile';
import { RpcClient } from './lib/http';
import { longTasks } from './lib/long-tasks';
import { loopWindows } from './lib/loop-windows';
import { streamLoad } from './lib/room-load';
import { sessionOf, word } from './lib/scale-seed';
import { ensureDeliveries, scaleTarget } from './lib/scale-store';
import { benchEnv, freePort, repoRoot } from './lib/server';
import { percentile, sleep } from './lib/stats';

const argv = process.argv.slice(2);
const store = argv[0] === 'postgres' ? 'postgres' : 'sqlite';
const sessions = Number(argv.find((a, i) => i > 0 && /^\d+$/.test(a)) ?? 10_000);
const only = argv.find((a) => a.startsWith('--only='))?.slice(7).split(',');
const STREAM = argv.includes('--stream');
const LONG = Number(process.env.LONG ?? 15);
const N = Number(process.env.N ?? 40);
const t = scaleTarget(store, sessions);
if (!fs.existsSync(path.join(t.dir, 'seeded.json'))) throw new Error(`not seeded: ${t.dir} (npx tsx bench/scale-seed-cli.ts ${store} ${sessions})`);

const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const profDir = path.join(t.dir, 'prof-loop', stamp);
fs.mkdirSync(profDir, { recursive: true });
const probe = path.join(profDir, 'loop-probe');
const port = await freePort();
const token = 'bench-loop-token';
const nowUs = () => Number(process.hrtime.bigint() / 1000n); // CLOCK_MONOTONIC, as V8's profile timestamps
const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', '--import', path.join(repoRoot, 'bench', 'lib', 'loop-probe.mjs'), '--cpu-prof', `--cpu-prof-dir=${profDir}`, ...(process.env.NODE_FLAGS ?? '').split(' ').filter(Boolean), 'server/worker.ts'], {
  cwd: repoRoot,
  env: { PATH: process.env.PATH, HOME: process.env.HOME, HOST: '127.0.0.1', PORT: String(port), CROSSTALK_DATA_DIR: t.dataDir, CROSSTALK_WORKSPACES: `${t.dataDir}-ws`, CROSSTALK_TOKEN: token, CROSSTALK_LOOP_PROBE: probe, CROSSTALK_LOG_LEVEL: 'warn', ...benchEnv(), ...(t.databaseUrl ? { DATABASE_URL: t.databaseUrl } : {}) } as unknown as NodeJS.ProcessEnv,
  stdio: ['ignore', 'inherit', 'inherit'],
});
const rpc = new RpcClient({ baseUrl: `http://127.0.0.1:${port}`, token, timeoutMs: 120_000 });
for (let i = 0; ; i++) {
  try {
    await rpc.call('agents.list', {});
    break;
  } catch {
    if (i > 3000 || child.exitCode !== null) throw new Error('the worker did not start');
    await sleep(100);
  }
}
const phases: Array<{ name: string; fromUs: number; toUs: number; from: number; to: number; ms: number[] }> = [];
async function phase(name: string, n: number, call: (i: number) => Promise<unknown>): Promise<void> {
  if (only && !only.some((o) => name.startsWith(o))) return;
  const ms: number[] = [];
  const from = Date.now();
  const fromUs = nowUs();
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await call(i);
    ms.push(performance.now() - t0);
  }
  await sleep(250);
  phases.push({ name, fromUs, toUs: nowUs(), from, to: Date.now(), ms });
}
const someKey = (i: number) => sessionOf((i * 7919) % sessions, sessions).key;
const rootKey = (i: number) => sessionOf(sessions - 10 * (1 + (i % 50)), sessions).key;
const treeKey = (i: number) => sessionOf(sessions - 1 - ((i * 7) % Math.min(sessions, 10_000)), sessions).key;
const searchQuery = (i: number) => {
  const kind = i % 4;
  return kind === 0 ? word(5000 + ((i * 37) % 5000)) : kind === 1 ? word(200 + ((i * 13) % 800)) : kind === 2 ? word(i % 50) : `${word(100 + i)} ${word(3000 + i * 7)}`;
};
async function reads(suffix: string): Promise<void> {
  await phase(`idle${suffix}`, 1, () => sleep(3000));
  await phase(`status${suffix}`, N, () => rpc.call('status', {}));
  await phase(`sessions.usage${suffix}`, N, (i) => rpc.call('sessions.usage', { sessionKey: i % 2 ? someKey(i) : rootKey(i) }));
  await phase(`sessions.list${suffix}`, N, () => rpc.call('sessions.list', { limit: 100 }));
  let cursor: string | null = null;
  await phase(`sessions.list paging${suffix}`, N, async () => {
    const page: { next_cursor: string | null } = await rpc.call('sessions.list', { limit: 100, ...(cursor ? { cursor } : {}) });
    cursor = page.next_cursor;
  });
  await phase(`sessions.search${suffix}`, N * 2, (i) => rpc.call('sessions.search', { query: searchQuery(i), limit: 20 }));
  await phase(`runs.board${suffix}`, N, () => rpc.call('runs.board', {}));
  const variants = [{}, null, { state: 'dead' }, { kind: 'webhook' }];
  await phase(`deliveries.list${suffix}`, N, (i) => rpc.call('deliveries.list', variants[i % 4] ?? { sessionKey: treeKey(i) }));
}
try {
  await sleep(1000);
  await ensureDeliveries(t, (s) => sessionOf(s, sessions).key);
  await reads('');
  if (STREAM) {
    const load = streamLoad(rpc, 50, 'lorem ipsum dolor sit amet consectetur '.repeat(10));
    await sleep(3000);
    await reads(' (50 streaming)');
    console.log(`streamed runs: ${await load.stop()}`);
  }
} finally {
  rpc.close();
  child.kill('SIGINT');
  await new Promise((r) => child.once('exit', r));
}
const ws = loopWindows(probe);
const prof = fs.readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile')).map((f) => path.join(profDir, f)).sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0];
console.log(`${store} ${sessions.toLocaleString()} sessions, load ${os.loadavg().map((v) => v.toFixed(1)).join(' / ')}; profile ${prof}`);
const profile = prof ? (JSON.parse(fs.readFileSync(prof, 'utf8')) as Profile & { startTime: number }) : null;
const tasks = profile ? longTasks(profile, LONG).map((x) => ({ ...x, at: profile.startTime + x.startUs })) : [];
for (const ph of phases) {
  const gap = Math.max(0, ...ws.filter((w) => w.t >= ph.from && w.t <= ph.to + 150).map((w) => w.max));
  console.log(`\n== ${ph.name}: longest gap ${gap.toFixed(1)} ms; call p50 ${percentile(ph.ms, 50).toFixed(1)} ms, p95 ${percentile(ph.ms, 95).toFixed(1)} ms`);
  const mine = tasks.filter((x) => x.at >= ph.fromUs && x.at <= ph.toUs).sort((a, b) => b.durUs - a.durUs);
  for (const x of mine.slice(0, 4)) {
    console.log(`  task ${(x.durUs / 1000).toFixed(1)} ms (${(x.stalledUs / 1000).toFixed(0)} ms of it stalled): ${x.frames.filter(([k]) => !/^(processTicksAndRejections|runMicrotasks|listOnTimeout|processTimers) /.test(k)).slice(0, 10).map(([k, us]) => `${k} ${(us / 1000).toFixed(1)}`).join(' | ')}`);
  }
  if (mine.length > 4) console.log(`  … ${mine.length - 4} more long tasks`);
}
