// `npx tsx bench/ab-turns.ts <checkout A> <checkout B>`: two built checkouts side by side (each started as `npm start`
// does, SQLite), interleaved round by round: 24 rounds of 50 new sessions at once and 20 sequential turns after each;
// medians. For a change's effect on turns, with both servers under the same load at the same time. A checkout may
// carry environment for its server after commas (`. ,CROSSTALK_SQLITE_TURN_MS=0` against `.`): one build, two settings.
import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
import { RpcClient, turn } from './lib/http';
import { startServer } from './lib/server';
const roots = process.argv.slice(2);
const servers = [] as Array<{ name: string; h: Awaited<ReturnType<typeof startServer>>; rpc: RpcClient; conc: number[]; seq: number[] }>;
for (const arg of roots) {
  const [root, ...vars] = arg.split(',');
  const env = Object.fromEntries(vars.map((v) => [v.slice(0, v.indexOf('=')), v.slice(v.indexOf('=') + 1)]));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ab-'));
  const h = await startServer({ root: path.resolve(root!), dataDir: path.join(dir, 'data'), token: 'tok', cwd: dir, env });
  servers.push({ name: arg, h, rpc: new RpcClient({ baseUrl: h.baseUrl, token: 'tok' }), conc: [], seq: [] });
}
for (const s of servers) for (let i = 0; i < 50; i++) await turn(s.rpc, 'agent:main:w', 'warm ' + i);
for (let r = 0; r < 24; r++) for (const s of servers) {
  const t0 = performance.now();
  await Promise.all(Array.from({ length: 50 }, (_, i) => turn(s.rpc, `agent:main:c${r}-${i}`, 'hi ' + i)));
  s.conc.push(performance.now() - t0);
  for (let i = 0; i < 20; i++) { const t1 = performance.now(); await turn(s.rpc, 'agent:main:s', 'hello ' + i); s.seq.push(performance.now() - t1); }
}
const med = (xs: number[]) => { const a = [...xs].sort((x, y) => x - y); return a[a.length >> 1]!; };
for (const s of servers) console.log(s.name, '50 concurrent median', med(s.conc).toFixed(1), 'ms; sequential p50', med(s.seq).toFixed(2), 'ms');
for (const s of servers) { s.rpc.close(); await s.h.stop(); }
