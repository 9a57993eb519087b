// `npm run bench:context`: the per-turn cost of usage accounting + compaction checks (tracing off and on) and the time of
// one compaction of 1,000 rows on the scripted model; writes its own section of BENCHMARKS.md. Figures, never assertions.
// In-process (the real runtime, store and run loop, no HTTP) so the difference measured is the accounting's own.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRuntime } from '../server/boot';
import type { FullRuntime } from '../server/runtime-types';
import { parseRawConfig, resolveConfig } from '../server/config';
import { createModelChain, FallbackTracker } from '../server/models/fallback';
import { functionTools } from '../server/orchestrator/model-step';
import type { RunDeps } from '../server/orchestrator/run-loop';
import { afterModelStep, beforeModelStep } from '../server/orchestrator/run-hooks';
import { userMessage } from '../server/orchestrator/context';
import type { ActiveRun } from '../server/orchestrator/types';
import { putSection } from './lib/sections';
import { ms, summarize } from './lib/stats';

process.env.CROSSTALK_LOG_LEVEL ??= 'silent';
const quick = process.argv.includes('--quick');
const TURNS = quick ? 100 : 400;
const ROUNDS = quick ? 3 : 10;
const HOOK_ITERATIONS = quick ? 500 : 5000;
const COMPACTIONS = quick ? 5 : 20;
const log = (m: string) => console.log(`[bench:context] ${m}`);

type Mode = 'bare' | 'accounting' | 'tracing';

async function runtime(mode: Mode, sink?: string): Promise<FullRuntime> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `crosstalk-bench-ctx-${mode}-`));
  const env = { CROSSTALK_DATA_DIR: dataDir, CROSSTALK_TOKEN: 'bench', CROSSTALK_LOG_LEVEL: 'silent' };
  if (sink) process.env.OTEL_EXPORTER_OTLP_ENDPOINT = sink;
  const rt = await createRuntime({ config: resolveConfig(parseRawConfig({}), env) });
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (mode === 'bare') {
    // The baseline: the same run loop with issue 13's hooks unplugged (no usage rows, no compaction check, no spans).
    const deps = (rt.orchestrator as unknown as { deps: RunDeps }).deps;
    deps.usage = undefined;
    deps.compactor = undefined;
    deps.telemetry = undefined;
  }
  return rt;
}

async function turns(rt: FullRuntime, n: number, tag: string): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const key = `agent:main:bench-${tag}-${i % 8}`;
    const t0 = performance.now();
    const { runId } = await rt.gateway.agent({ sessionKey: key, message: `turn ${i}: hello there` });
    await rt.gateway.agentWait({ runId, timeoutMs: 30_000 });
    out.push(performance.now() - t0);
  }
  return out;
}

async function main() {
  // An OTLP/HTTP sink on loopback that takes the spans and drops them (the exporter's real cost, no collector's).
  let spans = 0;
  const sink = createServer((req, res) => {
    req.on('data', () => undefined);
    req.on('end', () => {
      spans++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;

  const modes: Mode[] = ['bare', 'accounting', 'tracing'];
  const rts = new Map<Mode, FullRuntime>();
  for (const m of modes) rts.set(m, await runtime(m, m === 'tracing' ? sinkUrl : undefined));
  for (const m of modes) await turns(rts.get(m)!, 30, `warm-${m}`);
  const samples = new Map<Mode, number[]>(modes.map((m) => [m, []]));
  // Interleaved rounds, so drift in the machine's load falls on every mode alike.
  for (let r = 0; r < ROUNDS; r++) for (const m of modes) samples.get(m)!.push(...(await turns(rts.get(m)!, Math.ceil(TURNS / ROUNDS), `${m}-${r}`)));
  const sum = new Map(modes.map((m) => [m, summarize(samples.get(m)!)]));
  const bare = sum.get('bare')!;
  const pct = (m: Mode) => `${(((sum.get(m)!.p50 - bare.p50) / bare.p50) * 100).toFixed(1)} %`;
  await rts.get('tracing')!.telemetry.flush();

  // The accounting's own work per one-step turn, timed alone (robust to the machine's load): the compaction check and
  // estimate before the step (a run's first step, so the row-count look is included), the usage row and counters after it.
  const acc = rts.get('accounting')!;
  const hookModel = createModelChain(['scripted'], { tracker: new FallbackTracker() });
  const hookTools = functionTools(acc.tools);
  const prompt = Array.from({ length: 20 }, (_, i) => (i % 2 ? { role: 'assistant' as const, content: [{ type: 'text' as const, text: `reply ${i}` }] } : userMessage(`turn ${i}: hello there`)));
  const agent = acc.config.agents[0]!;
  const hookCost = async (rt: FullRuntime, traced: boolean) => {
    const deps = (rt.orchestrator as unknown as { deps: RunDeps }).deps;
    const times: number[] = [];
    for (let i = 0; i < HOOK_ITERATIONS; i++) {
      const run = { id: `run_hookbench_${i % 64}`, sessionKey: 'agent:main:bench-accounting-0-0', agent, abort: new AbortController(), inbox: [], closing: false, delivered: new Set(), counters: new Map() } as ActiveRun;
      const t0 = performance.now();
      if (traced) run.span = rt.telemetry.start('run bench', undefined);
      const frame = await beforeModelStep(deps, run, hookModel, [...prompt], hookTools, 'You are a bench.');
      await afterModelStep(deps, run, frame, { text: 'ok', calls: [], usage: { inputTokens: 120, outputTokens: 12 } });
      rt.telemetry.end(run.span);
      times.push(performance.now() - t0);
    }
    return summarize(times);
  };
  const hooks = await hookCost(acc, false);
  const hooksTraced = await hookCost(rts.get('tracing')!, true);

  // One compaction of 1,000 rows on the scripted model (sessions.compact's path), a fresh session each time.
  const rt = rts.get('accounting')!;
  const model = createModelChain(['scripted'], { tracker: new FallbackTracker() });
  const tools = functionTools(rt.tools);
  const times: number[] = [];
  for (let c = 0; c < COMPACTIONS; c++) {
    const key = `agent:main:bench-compact-${c}`;
    await rt.store.ensureSession({ key, agentId: 'main', kind: 'other' });
    await rt.store.appendMessages(
      Array.from({ length: 1000 }, (_, i) => ({
        sessionKey: key,
        role: (i % 2 ? 'assistant' : 'user') as 'assistant' | 'user',
        kind: 'message' as const,
        content: `${i % 2 ? 'answer' : 'question'} ${i}: ${'a few words of ordinary conversation '.repeat(3)}`,
        author: i % 2 ? { type: 'agent' as const, id: 'main' } : { type: 'user' as const, id: 'user' },
      })),
    );
    const t0 = performance.now();
    const res = await rt.compactor.compact({ sessionKey: key, agentId: 'main', modelSpec: 'scripted', model, system: '', tools });
    times.push(performance.now() - t0);
    if (res.status !== 'ok') throw new Error(`compaction ${c} ended ${res.status}`);
  }
  const compaction = summarize(times);
  for (const r of rts.values()) await r.close();
  await new Promise((r) => sink.close(r));

  const row = (m: Mode, label: string) => `| ${label} | ${ms(sum.get(m)!.p50)} | ${ms(sum.get(m)!.p95)} | ${ms(sum.get(m)!.mean)} | ${m === 'bare' ? '—' : pct(m)} |`;
  const body = [
    '## Context and cost (issue 13)',
    '',
    `Measured with \`npm run bench:context\` (${quick ? 'quick' : 'full'}) on ${new Date().toISOString()}, ${os.cpus().length} cores, Node ${process.version}, load ${os.loadavg().map((l) => l.toFixed(2)).join(' / ')}.`,
    'In-process runtimes on SQLite, the scripted model, one-step turns (`agent` then `agent.wait`), 8 sessions per mode, modes interleaved round by round.',
    '',
    `**Per-turn cost of accounting** (${TURNS} turns per mode; target: ≤ 5 % with tracing off):`,
    '',
    '| mode | p50 | p95 | mean | p50 over bare |',
    '| --- | --- | --- | --- | --- |',
    row('bare', 'bare run loop (hooks unplugged)'),
    row('accounting', 'usage rows + compaction check, tracing off (default)'),
    row('tracing', `same + OpenTelemetry spans exported over OTLP/HTTP (${spans} export requests)`),
    '',
    `The whole-turn figures move with the machine's load (other work shares these cores), so the accounting's own work is also timed alone: **${(hooks.p50 * 1000).toFixed(0)} µs per turn at p50** (p95 ${(hooks.p95 * 1000).toFixed(0)} µs, ${HOOK_ITERATIONS} turns) = **${((hooks.p50 / bare.p50) * 100).toFixed(1)} % of the bare turn's p50** — the compaction check with its prompt estimate, one \`model_usage\` row and the Prometheus counters. With tracing on (a run span and a step span per turn, batched OTLP export): ${(hooksTraced.p50 * 1000).toFixed(0)} µs at p50 (p95 ${(hooksTraced.p95 * 1000).toFixed(0)} µs) = ${((hooksTraced.p50 / bare.p50) * 100).toFixed(1)} %.`,
    '',
    `**One compaction of 1,000 rows** on the scripted model (${COMPACTIONS} runs, each a fresh session): p50 ${ms(compaction.p50)}, p95 ${ms(compaction.p95)}, max ${ms(compaction.max)}.`,
  ].join('\n');
  console.log(body);
  if (quick) return;
  const file = path.resolve(import.meta.dirname, '..', 'BENCHMARKS.md');
  fs.writeFileSync(file, putSection(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmarks\n', 'context', body));
  log('wrote BENCHMARKS.md (section "context")');
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`[bench:context] failed: ${(e as Error).stack ?? e}`);
    process.exit(1);
  },
);
