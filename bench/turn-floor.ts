// `npx tsx bench/turn-floor.ts [turns]`: how a sequential turn's ratio to the floor depends on the way the two are
// interleaved. The floor (bare node:http, answers from memory) and the built server on SQLite (as `npm start` runs
// it) take turns one turn at a time (bench/turns.ts's way), then in blocks of 10 and of 100: the same turns, the
// same load, but a server that answers its next request at once against one that slept while the others ran.
// Prints p50 / p95 of each, and the ratio, per way. Figures only (BENCHMARKS.md "Stop 47").
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startBareServer } from './lib/bare';
import { RpcClient, turn } from './lib/http';
import { startServer } from './lib/server';
import { type Summary, summarize } from './lib/stats';

const TURNS = Number(process.argv[2] ?? 600);
const TOKEN = 'floor-bench';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turn-floor-'));
const built = await startServer({ dataDir: path.join(dir, 'data'), token: TOKEN, cwd: dir, env: { CROSSTALK_LOG_LEVEL: 'warn' } });
const bare = await startBareServer(TOKEN);
const targets = [
  { name: 'floor', rpc: new RpcClient({ baseUrl: bare.baseUrl, token: TOKEN }) },
  { name: 'sqlite', rpc: new RpcClient({ baseUrl: built.baseUrl, token: TOKEN }) },
];
for (const t of targets) for (let i = 0; i < 200; i++) await turn(t.rpc, 'agent:main:floor-warm', `warm ${i}`);

console.log(`${TURNS} turns on each, load ${os.loadavg().map((v) => v.toFixed(2)).join(' / ')}`);
for (const block of [1, 10, 100]) {
  const times = targets.map(() => [] as number[]);
  for (let r = 0; r < TURNS / block; r++)
    for (let k = 0; k < targets.length; k++) {
      const i = (r + k) % targets.length; // the order rotates, as in bench/turns.ts
      for (let j = 0; j < block; j++) {
        const t0 = performance.now();
        const w = await turn(targets[i]!.rpc, 'agent:main:floor', `ping ${r}-${j}`);
        if (w.status !== 'ok') throw new Error(`${targets[i]!.name}: turn ${w.status}`);
        times[i]!.push(performance.now() - t0);
      }
    }
  const [f, s] = times.map(summarize) as [Summary, Summary];
  console.log(
    `blocks of ${String(block).padStart(3)}: floor p50 ${f.p50.toFixed(2)} / p95 ${f.p95.toFixed(2)} ms, SQLite p50 ${s.p50.toFixed(2)} / p95 ${s.p95.toFixed(2)} ms: ` +
      `${(s.p50 / f.p50).toFixed(2)}× / ${(s.p95 / f.p95).toFixed(2)}×`,
  );
}
for (const t of targets) t.rpc.close();
await built.stop();
bare.stop();
fs.rmSync(dir, { recursive: true, force: true });
