// `npx tsx bench/memory-after-load.ts [--rounds=4] [--flags="--heap-growing-percent=30" …]`: the built server's RSS
// through bursts of scripted turns (issue 24 item 5), read 1 s after each burst (as bench/turns.ts reads the goal)
// and 10 s after the last, with the server's CPU time and the sequential turns' p50, for each set of extra node flags
// given (an A/B of V8's heap settings, interleaved round by round). Figures, never assertions.
import fs from 'node:fs';
import path from 'node:path';
import { RpcClient, turn } from './lib/http';
import { CLK_TCK, cpuTicks } from './lib/proc';
import { startBenchModel, benchModelEnv } from './lib/provider';
import { afterWarm, makeTempDir, type ServerHandle, startServer } from './lib/server';
import { percentile, sleep } from './lib/stats';

const TOKEN = 'bench-memory-token';
const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const ROUNDS = Number(arg('rounds') ?? 4);
const variants = process.argv.filter((a) => a.startsWith('--flags=')).map((a) => a.slice(8).split(/\s+/).filter(Boolean));
if (!variants.length) variants.push([]);
if (!variants.some((v) => !v.length)) variants.unshift([]);

/** A process's CPU time (utime + stime), in ms. */
const cpuMs = (pid: number) => (cpuTicks([pid]) * 1000) / CLK_TCK;

/** RSS by kind of mapping: the malloc heap, anonymous mappings (V8's pages, other malloc arenas, buffers), files. */
function smaps(pid: number): string {
  const by = new Map<string, number>();
  let name = '';
  for (const line of fs.readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const m = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) name = m[1]!.startsWith('/') ? (m[1]!.includes('.node') || m[1]!.endsWith('/node') ? path.basename(m[1]!) : 'other files') : m[1] || 'anonymous';
    const r = /^Rss:\s+(\d+) kB/.exec(line);
    if (r) by.set(name, (by.get(name) ?? 0) + Number(r[1]));
  }
  return [...by].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([k, v]) => `${k} ${(v / 1024).toFixed(1)} MB`).join(', ');
}

/** The V8 heap by space (committed / used, MB) and external memory, from the server's own /api/metrics. */
async function heapSpaces(s: { h: ServerHandle }): Promise<string> {
  const text = await (await fetch(`${s.h.baseUrl}/api/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
  const val = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN) / 1048576;
  const spaces = [...text.matchAll(/heap_space_size_total_bytes\{space="(\w+)"\} (\d+)/g)].map((m) => m[1]!);
  const parts = spaces.map((sp) => `${sp} ${val(new RegExp(`heap_space_size_total_bytes\\{space="${sp}"\\} (\\d+)`)).toFixed(1)}/${val(new RegExp(`heap_space_size_used_bytes\\{space="${sp}"\\} (\\d+)`)).toFixed(1)}`);
  return `${parts.filter((p) => !/ 0\.0\/0\.0$/.test(p)).join(', ')}; external ${val(/nodejs_external_memory_bytes (\d+)/).toFixed(1)} MB`;
}

type Server = { name: string; h: ServerHandle; rpc: RpcClient; afterRounds: number[]; turnP50: number[]; settled?: number; idle: number; cpu0: number };

const cwd = makeTempDir('ct-mem-cwd-');
fs.writeFileSync(path.join(cwd, 'crosstalk.config.json'), JSON.stringify({ agents: [{ id: 'main', name: 'Main' }, { id: 'wire', name: 'Wire', model: 'openai:gpt-bench' }] }));
const model = await startBenchModel();
const servers: Server[] = [];
try {
  for (const flags of variants) {
    // NAME=value entries are the server's environment (e.g. MALLOC_ARENA_MAX=2), the rest node flags.
    const envOf = Object.fromEntries(flags.filter((f) => /^[A-Z_]+=/.test(f)).map((f) => [f.slice(0, f.indexOf('=')), f.slice(f.indexOf('=') + 1)]));
    const nodeArgs = flags.filter((f) => !/^[A-Z_]+=/.test(f));
    const h = await startServer({ dataDir: makeTempDir('ct-mem-data-'), token: TOKEN, cwd, env: { CROSSTALK_LOG_LEVEL: 'warn', ...benchModelEnv(model), ...envOf }, nodeArgs, readyTimeoutMs: 120_000 });
    servers.push({ name: flags.join(' ') || '(npm start as is)', h, rpc: new RpcClient({ baseUrl: h.baseUrl, token: TOKEN }), afterRounds: [], turnP50: [], idle: 0, cpu0: 0 });
  }
  // Servers started with --heapsnapshot-signal=SIGUSR2 write a heap snapshot (into their cwd) when idle and when settled.
  const snap = async (s: Server, label: string) => {
    if (!s.name.includes('--heapsnapshot-signal=SIGUSR2')) return;
    process.kill(s.h.pid, 'SIGUSR2');
    await sleep(8000);
    console.log(`${s.name}: heap snapshot ${label} written`);
  };
  for (const s of servers) {
    await afterWarm(s.h);
    await snap(s, 'idle');
    s.idle = s.h.rss().totalKb;
    if (process.argv.includes('--smaps')) console.log(`${s.name}, idle: ${smaps(s.h.pid)}\n  heap (committed/used MB): ${await heapSpaces(s)}`);
    s.cpu0 = cpuMs(s.h.pid);
  }
  const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < servers.length; k++) {
      const s = servers[(r + k) % servers.length]!;
      // A burst: 250 new sessions in groups of 50 at once, 50 turns on the OpenAI-wire model in groups of 10, then
      // 100 sequential turns on one session.
      for (let g = 0; g < 5; g++) await Promise.all(Array.from({ length: 50 }, (_, i) => turn(s.rpc, `agent:main:mem-${r}-${g}-${i}`, `hello ${i}`)));
      for (let g = 0; g < 5; g++) await Promise.all(Array.from({ length: 10 }, (_, i) => turn(s.rpc, `agent:wire:mem-${r}-${g}-${i}`, `hello ${i}`)));
      const times: number[] = [];
      for (let i = 0; i < 100; i++) {
        const t0 = performance.now();
        await turn(s.rpc, 'agent:main:mem-seq', `ping ${r}-${i}`);
        times.push(performance.now() - t0);
      }
      await sleep(1000);
      s.afterRounds.push(s.h.rss().totalKb);
      s.turnP50.push(percentile(times, 50));
    }
  }
  if (process.argv.includes('--smaps')) for (const s of servers) console.log(`${s.name}: ${smaps(s.h.pid)}\n  heap (committed/used MB): ${await heapSpaces(s)}`);
  await sleep(10_000);
  for (const s of servers) s.settled = s.h.rss().totalKb;
  for (const s of servers) await snap(s, 'settled');
  if (process.argv.includes('--smaps')) for (const s of servers) console.log(`${s.name}, settled: ${smaps(s.h.pid)}\n  heap (committed/used MB): ${await heapSpaces(s)}`);
  console.log(`\n${ROUNDS} rounds (250 new sessions in groups of 50, 50 on the OpenAI-wire model in groups of 10, then 100 sequential turns), interleaved; RSS 1 s after each round\n`);
  console.log('| node flags beyond npm start | idle | after each round | 10 s after the last | server CPU | sequential turn p50 by round |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const s of servers) {
    console.log(`| ${s.name} | ${mb(s.idle)} | ${s.afterRounds.map(mb).join(', ')} | ${mb(s.settled!)} | ${((cpuMs(s.h.pid) - s.cpu0) / 1000).toFixed(2)} s | ${s.turnP50.map((x) => x.toFixed(2)).join(', ')} ms |`);
  }
} finally {
  await model.close();
  for (const s of servers) {
    s.rpc.close();
    await s.h.stop();
  }
}
