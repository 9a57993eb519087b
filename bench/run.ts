// `npm run bench`: measures the built server on this machine and writes BENCHMARKS.md (figures, never assertions).
// Flags: --quick (smaller counts, writes .bench/BENCHMARKS.quick.md instead), --keep (keep the temp dirs),
// --baseline <results.json> (add a side-by-side table against another run, e.g. the same bench on Node 20),
// --results <file> (where the raw figures go; default .bench/results.json), --no-md (do not write BENCHMARKS.md),
// --compare <root>[:<node binary>] (only: this checkout against another one, interleaved in one run — start, RSS, turns).
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { RpcClient } from './lib/http';
import { processTree } from './lib/proc';
import { type BenchResults, consoleTable, machineInfo, markdown, type StartSample } from './lib/report';
import { delegateCallback, delegationAvailable } from './lib/delegate';
import { startBareServer } from './lib/bare';
import { concurrentSessions, fanout, historyPages, rpcFloor, turnRoundTrip } from './lib/scenarios';
import { compareSides } from './lib/compare';
import { benchModelEnv, providerTurnRoundTrip, startBenchModel } from './lib/provider';
import { seedTranscripts } from './lib/seed';
import { makeTempDir, repoRoot, type ServerHandle, startServer } from './lib/server';
import { sleep } from './lib/stats';
import { keepSections } from './lib/sections';

const argv = process.argv.slice(2);
const args = new Set(argv);
const quick = args.has('--quick');
const keep = args.has('--keep');
const flagValue = (name: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const baselinePath = flagValue('--baseline');
const compareWith = flagValue('--compare');
const resultsPath = flagValue('--results');

const settings = quick
  ? { warmupTurns: 10, turns: 50, concurrency: [50, 200], historySizes: [1_000, 20_000], historySamples: 50, startRepeats: 1, subscribers: 10, pacedRuns: 10, burstRuns: 20, delegateSamples: 10 }
  : { warmupTurns: 20, turns: 200, concurrency: [50, 1_000], historySizes: [1_000, 100_000], historySamples: 200, startRepeats: 3, subscribers: 10, pacedRuns: 50, burstRuns: 100, delegateSamples: 50 };

const WATCHDOG_MS = 15 * 60_000;
const live = new Set<ServerHandle>();

/** Last resort on a crash or the watchdog: kill every server process this run started. */
function killAll(): void {
  for (const h of live) {
    for (const pid of processTree(h.pid).reverse()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
  live.clear();
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    killAll();
    process.exit(130);
  });
}
setTimeout(() => {
  console.error(`bench: watchdog — still running after ${WATCHDOG_MS / 60_000} min, giving up`);
  killAll();
  process.exit(1);
}, WATCHDOG_MS).unref();

const log = (msg: string) => console.log(`[bench] ${msg}`);

async function withServer<T>(handle: ServerHandle, fn: (h: ServerHandle) => Promise<T>): Promise<T> {
  live.add(handle);
  try {
    return await fn(handle);
  } finally {
    await handle.stop();
    live.delete(handle);
  }
}

async function main(): Promise<void> {
  if (!fs.existsSync(path.join(repoRoot, '.next', 'BUILD_ID'))) {
    log('no build found: running `next build` first (not timed)');
    const r = spawnSync(process.execPath, [path.join(repoRoot, 'node_modules', 'next', 'dist', 'bin', 'next'), 'build'], {
      cwd: repoRoot,
      stdio: 'inherit',
      env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' },
    });
    if (r.status !== 0) throw new Error('next build failed');
  }

  const token = crypto.randomBytes(18).toString('base64url');
  // The OpenAI-wire fake model for the provider-path turn; lives in this process for the whole run.
  const model = await startBenchModel();
  const env = benchModelEnv(model);
  const dataDir = makeTempDir('crosstalk-bench-data-');
  const cwd = makeTempDir('crosstalk-bench-cwd-');
  const results: BenchResults = {
    date: new Date().toISOString(),
    machine: machineInfo(),
    settings: { ...settings, concurrency: settings.concurrency.join('/'), historySizes: settings.historySizes.join('/') },
    concurrent: [],
    history: [],
    errors: {},
  };
  const attempt = async (name: string, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (e) {
      const msg = (e as Error).message ?? String(e);
      results.errors[name] = msg;
      console.error(`[bench] ${name} failed: ${msg}`);
    }
  };

  if (compareWith) {
    // Only the interleaved comparison: merged into the existing results/BENCHMARKS.md of the last full run.
    const [root, nodePath] = compareWith.split(':');
    log(`comparing with ${root} on ${nodePath ?? process.execPath} (interleaved)`);
    const c = await compareSides(
      { label: 'baseline', root: path.resolve(root!), nodePath },
      { label: 'this checkout' },
      { token, repeats: quick ? 3 : 7, turns: quick ? 50 : 200, root: repoRoot, env, track: (h) => (live.add(h), () => live.delete(h)) },
    );
    await model.close();
    const jsonPath = resultsPath ? path.resolve(resultsPath) : path.join(repoRoot, '.bench', 'results.json');
    const prior = fs.existsSync(jsonPath) ? (JSON.parse(fs.readFileSync(jsonPath, 'utf8')) as BenchResults) : results;
    const merged = { ...prior, compare: { date: results.date, loadAvg: results.machine.loadAvg, ...c } };
    fs.mkdirSync(path.dirname(jsonPath), { recursive: true });
    fs.writeFileSync(jsonPath, JSON.stringify(merged, null, 2) + '\n');
    const baseline = baselinePath ? (JSON.parse(fs.readFileSync(baselinePath, 'utf8')) as BenchResults) : undefined;
    if (!args.has('--no-md')) fs.writeFileSync(path.join(repoRoot, 'BENCHMARKS.md'), markdown(merged, baseline));
    console.log(JSON.stringify(c, null, 2));
    return;
  }

  try {
    // 1. Fresh start, then the load scenarios on that server.
    log(`starting the server on a fresh data dir ${dataDir}`);
    await withServer(await startServer({ dataDir, token, cwd, env }), async (server) => {
      await sleep(1000);
      const rss = server.rss();
      results.freshStart = { readyMs: server.readyMs, idleRssKb: rss.totalKb, processes: rss.processes.length };
      results.idleRssKb = rss.totalKb;
      log(`ready in ${server.readyMs.toFixed(0)} ms; idle RSS ${(rss.totalKb / 1024).toFixed(0)} MB over ${rss.processes.length} process(es)`);
      const rpc = new RpcClient({ baseUrl: server.baseUrl, token });
      try {
        await attempt('rpc floor', async () => {
          results.rpcFloor = await rpcFloor(rpc, 200);
        });
        await attempt('turn round trip', async () => {
          // The floor before and after (load drifts): the same turns on a bare node:http server.
          const bare = async () => {
            const b = await startBareServer(token);
            const brpc = new RpcClient({ baseUrl: b.baseUrl, token });
            try {
              (results.bareTurns ??= []).push(await turnRoundTrip(brpc, { warmup: settings.warmupTurns, turns: settings.turns }));
            } finally {
              brpc.close();
              b.stop();
            }
          };
          await bare();
          log(`turn round trip: ${settings.warmupTurns} warm-up + ${settings.turns} turns`);
          results.turns = await turnRoundTrip(rpc, { warmup: settings.warmupTurns, turns: settings.turns });
          await bare();
        });
        await attempt('provider turn round trip', async () => {
          log(`provider-path turn (OpenAI-wire fake): ${settings.warmupTurns} warm-up + ${settings.turns} turns`);
          results.providerTurns = await providerTurnRoundTrip(rpc, { warmup: settings.warmupTurns, turns: settings.turns });
        });
        let next = 0;
        for (const n of settings.concurrency) {
          await attempt(`${n} concurrent sessions`, async () => {
            log(`${n} concurrent sessions`);
            results.concurrent.push(await concurrentSessions(rpc, n, next));
            next += n;
          });
        }
        await attempt('event fan-out', async () => {
          log(`event fan-out: ${settings.subscribers} subscribers, ${settings.pacedRuns} paced + ${settings.burstRuns} burst runs`);
          const f = await fanout(server, rpc, { subscribers: settings.subscribers, pacedRuns: settings.pacedRuns, burstRuns: settings.burstRuns });
          results.fanout = { subscribers: settings.subscribers, ...f };
        });
        await attempt('delegate callback', async () => {
          if (!(await delegationAvailable(rpc))) {
            results.delegate = { available: false };
            return;
          }
          log(`detached delegate → parent callback: ${settings.delegateSamples} samples`);
          results.delegate = { available: true, ...(await delegateCallback(server, rpc, settings.delegateSamples)) };
        });
      } finally {
        rpc.close();
      }
      await sleep(1000);
      const after = server.rss();
      results.afterLoadRssKb = after.totalKb;
      results.rssProcesses = after.processes.map((p) => `${p.name} = ${(p.rssKb / 1024).toFixed(0)} MB`).join(', ');
    });

    // 2. Long transcripts, written straight into the store while the server is stopped.
    await attempt('chat.history', async () => {
      const specs = settings.historySizes.map((n) => ({ sessionKey: `agent:main:bench-history-${n}`, agentId: 'main', messages: n }));
      const seeded = seedTranscripts(dataDir, specs);
      log(`seeded ${seeded.rows.toLocaleString('en-US')} transcript rows in ${seeded.ms.toFixed(0)} ms`);
      await withServer(await startServer({ dataDir, token, cwd, env }), async (server) => {
        results.historyStartReadyMs = server.readyMs;
        const rpc = new RpcClient({ baseUrl: server.baseUrl, token });
        try {
          for (const spec of specs) {
            log(`chat.history on ${spec.messages.toLocaleString('en-US')} messages`);
            results.history.push(await historyPages(rpc, spec.sessionKey, spec.messages, settings.historySamples));
          }
        } finally {
          rpc.close();
        }
      });
    });

    // 3. Start modes of scripts/start.mjs, on the existing store.
    await attempt('start modes', async () => {
      const modes: { inprocess: StartSample[]; spawn: StartSample[] } = { inprocess: [], spawn: [] };
      for (let i = 0; i < settings.startRepeats; i++) {
        for (const mode of ['inprocess', 'spawn'] as const) {
          await withServer(await startServer({ dataDir, token, cwd, mode, env }), async (server) => {
            await sleep(1000);
            const rss = server.rss();
            modes[mode].push({ readyMs: server.readyMs, idleRssKb: rss.totalKb, processes: rss.processes.length });
            log(`start (${mode}): ready in ${server.readyMs.toFixed(0)} ms, idle RSS ${(rss.totalKb / 1024).toFixed(0)} MB`);
          });
        }
      }
      results.startModes = modes;
    });
  } finally {
    await model.close();
    if (keep) log(`kept ${dataDir} and ${cwd}`);
    else {
      fs.rmSync(dataDir, { recursive: true, force: true });
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  }

  console.log('');
  console.log(consoleTable(results));
  console.log('');
  const outDir = path.join(repoRoot, '.bench');
  fs.mkdirSync(outDir, { recursive: true });
  const jsonPath = resultsPath ? path.resolve(resultsPath) : path.join(outDir, quick ? 'results.quick.json' : 'results.json');
  fs.writeFileSync(jsonPath, JSON.stringify(results, null, 2) + '\n');
  log(`wrote ${jsonPath}`);
  if (!args.has('--no-md')) {
    const baseline = baselinePath ? (JSON.parse(fs.readFileSync(baselinePath, 'utf8')) as BenchResults) : undefined;
    const mdPath = quick ? path.join(outDir, 'BENCHMARKS.quick.md') : path.join(repoRoot, 'BENCHMARKS.md');
    // Keep the sections other benchmarks write between their own markers (room, cluster, context, interop, …).
    fs.writeFileSync(mdPath, keepSections(markdown(results, baseline), fs.existsSync(mdPath) ? fs.readFileSync(mdPath, 'utf8') : undefined));
    log(`wrote ${path.relative(repoRoot, mdPath)}`);
  }
  if (Object.keys(results.errors).length) log(`some measurements failed: ${Object.keys(results.errors).join(', ')}`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`[bench] failed: ${(e as Error).stack ?? e}`);
    process.exit(1);
  },
);
