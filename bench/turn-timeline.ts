// `npx tsx bench/turn-timeline.ts [turns]`: where a sequential turn's time goes, on the server's side — an in-process
// runtime (SQLite, unbundled sources) CPU-profiled while a client in another process takes `turns` turns on one
// session (`agent` then `agent.wait`); prints the median of each stretch between the marks (request arrivals, the
// store's start and end of the run, the answers written) and the functions sampled in each stretch. Figures only.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { createRuntime } from '../server/boot';
import { parseRawConfig, resolveConfig } from '../server/config';
import { serve } from '../server/http/node-server';
import { createLogger } from '../server/logger';
import type { Profile, ProfileNode } from './lib/cpu-profile';
import { turnClientSource } from './lib/http';

const TURNS = Number(process.argv[2] ?? 1500);
const SKIP = Math.min(200, TURNS >> 2);
const CLIENT = `${turnClientSource('process.env.URL', 'process.env.TOKEN')}
(async () => { for (let i = 0; i < Number(process.env.TURNS); i++) await turn('agent:main:timeline', 'hello ' + i); agent.destroy(); })().catch((e) => { console.error(e); process.exit(1); });
`;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-timeline-'));
const rt = await createRuntime({ config: resolveConfig(parseRawConfig({}), { CROSSTALK_DATA_DIR: dir, CROSSTALK_WORKSPACES: `${dir}-ws` }), log: createLogger('warn') });
const served = await serve(rt);
const marks: Array<[string, number]> = [];
const mark = (k: string) => marks.push([k, Number(process.hrtime.bigint() / 1000n) / 1000]); // ms, the profiler's clock
const wrap = (o: Record<string, unknown>, names: string[]) => {
  for (const m of names) {
    const f = (o[m] as (...a: unknown[]) => Promise<unknown>).bind(o);
    o[m] = async (...a: unknown[]) => {
      mark(`${m}>`);
      try {
        return await f(...a);
      } finally {
        mark(`${m}<`);
      }
    };
  }
};
wrap(rt.store as unknown as Record<string, unknown>, ['startNew', 'finishRun']);
const end = http.ServerResponse.prototype.end;
http.ServerResponse.prototype.end = function (this: http.ServerResponse, ...a: unknown[]) {
  mark('answer');
  return (end as (...x: unknown[]) => unknown).apply(this, a);
} as typeof end;
const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (this: http.Server, e: string, ...a: unknown[]) {
  if (e === 'request') mark('request');
  return (emit as (...x: unknown[]) => boolean).call(this, e, ...a);
} as typeof emit;

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 50 });
await session.post('Profiler.start');
const child = spawn(process.execPath, ['-e', CLIENT], { env: { ...process.env, URL: new URL('/api/gateway', served.url).toString(), TOKEN: rt.token, TURNS: String(TURNS) }, stdio: ['ignore', 'inherit', 'inherit'] });
await new Promise((r) => child.on('exit', r));
const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile & { startTime: number } };

// A turn: request, [startNew> <], answer, [finishRun> <], request, answer.
type Turn = Record<string, number>;
const turns: Turn[] = [];
let cur: Turn | null = null;
let requests = 0;
for (const [k, t] of marks) {
  if (k === 'request') {
    if (requests++ % 2 === 0) turns.push((cur = { req1: t }));
    else if (cur) cur.req2 = t;
  } else if (cur && k === 'answer') cur[cur.ans1 === undefined ? 'ans1' : 'ans2'] ??= t;
  else if (cur) cur[k] ??= t;
}
const ok = turns.slice(SKIP).filter((x) => ['req1', 'startNew>', 'startNew<', 'ans1', 'finishRun>', 'finishRun<', 'req2', 'ans2'].every((k) => x[k] !== undefined));
const stretches: Array<[string, string, string]> = [
  ['agent: request → the run\'s start written', 'req1', 'startNew<'],
  ['agent: start written → answer', 'startNew<', 'ans1'],
  ['run: answer → its end begins', 'ans1', 'finishRun>'],
  ['run: its end (transaction, events)', 'finishRun>', 'finishRun<'],
  ['agent.wait: request → answer', 'req2', 'ans2'],
  ['the whole turn', 'req1', 'ans2'],
];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
console.log(`${ok.length} turns (after ${SKIP} warm-up), load ${os.loadavg().map((v) => v.toFixed(1)).join(' ')}; agent.wait arrived before the run's end in ${ok.filter((x) => x.req2! < x['finishRun<']!).length}`);
for (const [name, a, b] of stretches) console.log(`  ${name.padEnd(42)} ${median(ok.map((x) => x[b]! - x[a]!)).toFixed(3)} ms`);

// Samples by stretch (the first four), self time per function.
const byId = new Map<number, ProfileNode>(profile.nodes.map((n) => [n.id, n]));
const windows = ok.flatMap((x) => stretches.slice(0, 4).map(([name, a, b]) => [name, x[a]!, x[b]!] as const)).sort((p, q) => p[1] - q[1]);
const tally = new Map<string, Map<string, number>>();
let t = profile.startTime / 1000;
let w = 0;
profile.samples.forEach((id, i) => {
  t += (profile.timeDeltas[i] ?? 0) / 1000;
  while (w < windows.length && windows[w]![2] < t) w++;
  const win = windows[w];
  if (!win || t < win[1]) return;
  const f = byId.get(id)!.callFrame;
  const name = `${f.functionName || '(anon)'} ${f.url.replace(/.*\/(server|node_modules)\//, '$1/')}`;
  const m = tally.get(win[0]) ?? new Map<string, number>();
  tally.set(win[0], m);
  m.set(name, (m.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
});
for (const [name, m] of tally) {
  const total = [...m.values()].reduce((a, b) => a + b, 0);
  console.log(`== ${name}: ${((total / ok.length) * 1000).toFixed(0)} µs a turn sampled`);
  for (const [fn, ms] of [...m].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`   ${((ms / ok.length) * 1000).toFixed(0).padStart(5)} µs  ${fn}`);
}
await served.close();
await rt.close();
fs.rmSync(dir, { recursive: true, force: true });
fs.rmSync(`${dir}-ws`, { recursive: true, force: true });
process.exit(0);
