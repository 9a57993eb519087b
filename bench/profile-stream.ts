// `npx tsx bench/profile-stream.ts DATADIR [--seconds=30] [--cpu-prof] [--heap-sample] [--database-url=URL]`: the server's event loop
// and CPU while 50 runs stream and one room is open (its SSE stream on the streaming session live-0, and the polls the
// room makes: status and the approvals inbox every second, sessions.list every 5 s), without a browser. Prints the
// loop's longest gap per second (bench/lib/loop-probe.mjs), the runs finished, the server's CPU seconds, and with
// --cpu-prof its top functions by self time; with --heap-sample what the server allocated over the measured seconds, by
// function and by caller (bench/lib/heap-sampler.mjs). For finding what blocks the loop under streaming (issue 24 item 2).
import fs from 'node:fs';
import path from 'node:path';
import { RpcClient, subscribeSse } from './lib/http';
import { heapTables, type HeapProfile, topBytes } from './lib/heap-profile';
import { byFunctionAndArea, type Profile, selfTimes, topLines } from './lib/cpu-profile';
import { loopWindows } from './lib/loop-windows';
import { CLK_TCK, cpuTicks, processTree } from './lib/proc';
import { streamLoad } from './lib/room-load';
import { repoRoot, startServer } from './lib/server';
import { sleep } from './lib/stats';

const argv = process.argv.slice(2);
const opt = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const dataDir = path.resolve(argv.find((a) => !a.startsWith('--'))!);
const seconds = Number(opt('seconds') ?? 30);
const cpuProf = argv.includes('--cpu-prof');
const heapSample = argv.includes('--heap-sample');
const databaseUrl = opt('database-url');
const TOKEN = 'bench-stream-token';

async function main() {
  const work = fs.mkdtempSync(path.join(path.dirname(dataDir), 'profile-stream-'));
  const probe = path.join(work, 'loop-probe');
  const heapFile = path.join(work, 'server.heapprofile');
  const server = await startServer({
    dataDir,
    token: TOKEN,
    cwd: repoRoot,
    readyTimeoutMs: 300_000,
    nodeArgs: [
      `--import=${path.join(repoRoot, 'bench', 'lib', 'loop-probe.mjs')}`,
      ...(heapSample ? [`--import=${path.join(repoRoot, 'bench', 'lib', 'heap-sampler.mjs')}`] : []),
      ...(cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${work}`] : []),
      ...argv.filter((a) => a.startsWith('--node-arg=')).map((a) => a.slice('--node-arg='.length)),
    ],
    env: {
      CROSSTALK_LOOP_PROBE: probe,
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      ...(heapSample ? { CROSSTALK_HEAP_SAMPLE: heapFile } : {}),
    },
  });
  const rpc = new RpcClient({ baseUrl: server.baseUrl, token: TOKEN, timeoutMs: 60_000 });
  let sseEvents = 0;
  const sse = await subscribeSse(`${server.baseUrl}/api/gateway/events?sessionKey=${encodeURIComponent('agent:main:live-0')}`, TOKEN, () => sseEvents++);
  const load = streamLoad(rpc, 50, 'lorem ipsum dolor sit amet consectetur '.repeat(10));
  let polling = true;
  const poll = async (method: string, params: unknown, everyMs: number) => {
    while (polling) {
      await rpc.call(method, params).catch(() => undefined);
      await sleep(everyMs);
    }
  };
  const polls = [poll('status', {}, 1000), poll('approvals.list', {}, 1000), poll('sessions.list', { limit: 100 }, 5000)];
  await sleep(3000);
  const from = Date.now();
  const cpu0 = cpuSeconds(server.pid);
  if (heapSample) process.kill(server.pid, 'SIGUSR2'); // the sampler's start (bench/lib/heap-sampler.mjs)
  await sleep(seconds * 1000);
  const cpu1 = cpuSeconds(server.pid);
  if (heapSample) {
    process.kill(server.pid, 'SIGUSR2'); // its stop: the profile is written
    for (let i = 0; i < 100 && !fs.existsSync(heapFile); i++) await sleep(100);
  }
  const to = Date.now();
  polling = false;
  const runs = await load.stop();
  await Promise.all(polls);
  sse.close();
  rpc.close();
  await server.stop();
  const windows = loopWindows(probe, { from, to });
  const maxes = windows.map((w) => w.max).sort((a, b) => a - b);
  const q = (p: number) => maxes[Math.min(maxes.length - 1, Math.floor((p / 100) * maxes.length))]?.toFixed(0);
  const load1 = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' / ');
  console.log(`${seconds} s, 50 streaming: ${runs} runs ended, ${sseEvents} SSE events on live-0; server CPU ${(cpu1 - cpu0).toFixed(1)} s; loop max per 100 ms window p50 ${q(50)} p90 ${q(90)} p99 ${q(99)} max ${q(100)} ms; load ${load1}`);
  if (heapSample && fs.existsSync(heapFile)) {
    const h = heapTables(JSON.parse(fs.readFileSync(heapFile, 'utf8')) as HeapProfile);
    const perRun = runs ? ` (${(h.total / runs / 1024).toFixed(0)} KB a run ended)` : '';
    console.log(`server allocations ${heapFile}: ${(h.total / 1048576).toFixed(0)} MB sampled in ${seconds} s${perRun}\n-- by function\n${topBytes(h.fn, h.total, 30).join('\n')}\n-- by nearest caller of ours or a package's\n${topBytes(h.caller, h.total, 30).join('\n')}\n-- by our last three callers\n${topBytes(h.chain, h.total, 30).join('\n')}`);
  }
  if (cpuProf) {
    // The biggest profile is the server's (the launcher writes a small one of its own).
    const file = fs.readdirSync(work).filter((f) => f.endsWith('.cpuprofile')).sort((a, b) => fs.statSync(path.join(work, b)).size - fs.statSync(path.join(work, a)).size)[0];
    if (file) {
      const t = selfTimes(JSON.parse(fs.readFileSync(path.join(work, file), 'utf8')) as Profile);
      const shorten = (u: string) => u.replace(/^file:\/\//, '').replace(`${repoRoot}/`, '').replace(/^.*node_modules\//, 'nm/');
      const { fn, area } = byFunctionAndArea(t, shorten);
      console.log(`server profile ${path.join(work, file)}: ${(t.total / 1e6).toFixed(1)} s sampled\n-- by area\n${topLines(area, t.total, 20).join('\n')}\n-- by function\n${topLines(fn, t.total, 40).join('\n')}`);
    }
  }
}

/** The server tree's user+system CPU seconds (the launcher and its child), from /proc. */
const cpuSeconds = (pid: number) => cpuTicks(processTree(pid)) / CLK_TCK;

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
