// `npx tsx bench/fold-timing.ts [runs] [deltas]`: the CPU of folding runs' text deltas at their end (issue 24 item 7,
// server/store/event-fold.ts) — `foldPlan` (SQLite's and PostgreSQL's end write), `foldSteps` (a fold after the fact)
// and reading a folded row back (`expandRow`) — for `runs` runs (default 50, as many as bench:scale streams) of
// `deltas` deltas (default 60) ending together, the median of 30 rounds after 10 warm-up. Figures, not assertions.
import { expandRow, foldPlan, foldSteps, wholeRunLog } from '../server/store/event-fold';
import { median } from './lib/stats';

const RUNS = Number(process.argv[2] ?? 50);
const DELTAS = Number(process.argv[3] ?? 60);
const run = (runId: string) => {
  const t0 = Date.now();
  const ev: Array<{ runId: string; seq: number; stream: string; ts: string; sessionKey: string; data: unknown }> = [];
  const add = (stream: string, dt: number, data: unknown) => ev.push({ runId, seq: ev.length + 1, stream, ts: new Date(t0 + dt).toISOString(), sessionKey: 'agent:main:fold', data });
  add('lifecycle', 0, { phase: 'start' });
  for (let i = 0; i < DELTAS; i++) add('assistant', 1 + i * 3, { delta: `word${i} ` });
  add('lifecycle', DELTAS * 3 + 5, { phase: 'end' });
  return ev;
};
const runs = Array.from({ length: RUNS }, (_, i) => run(`run-${i}`));
const ids = (n: number) => Array.from({ length: n }, (_, i) => ({ id: 1000 + i }));
const times = { plan: [] as number[], steps: [] as number[], expand: [] as number[] };
for (let round = 0; round < 40; round++) {
  let t = performance.now();
  for (const ev of runs) foldPlan(ev[0]!.runId, ev);
  const plan = performance.now() - t;
  t = performance.now();
  const steps = runs.map((ev) => foldSteps(wholeRunLog(ev[0]!.runId, ev, ids(ev.length))!));
  const stepMs = performance.now() - t;
  const folded = steps.map((s, i) => ({ id: s[0]!.first, run_id: `run-${i}`, seq: 2, stream: 'assistant', ts: runs[i]![1]!.ts, session_key: 'agent:main:fold', data: s[0]!.data, fold_id: s[0]!.last.id }));
  t = performance.now();
  for (const r of folded) expandRow(r);
  const expand = performance.now() - t;
  if (round >= 10) (times.plan.push(plan), times.steps.push(stepMs), times.expand.push(expand));
}
const f = (xs: number[]) => `${median(xs).toFixed(2)} ms (${((median(xs) / (RUNS * DELTAS)) * 1000).toFixed(2)} µs a delta)`;
console.log(`${RUNS} runs × ${DELTAS} deltas, median of 30: foldPlan ${f(times.plan)}; wholeRunLog + foldSteps ${f(times.steps)}; expandRow ${f(times.expand)}`);
