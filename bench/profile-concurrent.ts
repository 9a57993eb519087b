// `npx tsx bench/profile-concurrent.ts [rounds]`: where 50 concurrent sessions spend their time — an in-process runtime (SQLite, unbundled sources, readable names) CPU-profiled with the inspector while rounds of 50 new sessions take one turn each; self time by function and by area.
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { createRuntime } from '../server/boot';
import { parseRawConfig, resolveConfig } from '../server/config';
import { serve } from '../server/http/node-server';
import { createLogger } from '../server/logger';
import { RpcClient, turn } from './lib/http';
import { ms, summarize } from './lib/stats';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 20);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-profconc-'));
  const rt = await createRuntime({ config: resolveConfig(parseRawConfig({}), { CROSSTALK_DATA_DIR: dir }), log: createLogger('warn') });
  const served = await serve(rt);
  const rpc = new RpcClient({ baseUrl: served.url, token: rt.token });
  const round = (r: number) => Promise.all(Array.from({ length: 50 }, (_, i) => turn(rpc, `agent:main:conc-${r}-${i}`, `hello ${i}`)));
  for (let r = 0; r < 3; r++) await round(-r - 1);
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  const walls: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    await round(r);
    walls.push(performance.now() - t0);
  }
  const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
  session.disconnect();
  console.log(`50 concurrent sessions, ${rounds} rounds (in-process, bench client in the same process): wall ${ms(summarize(walls).p50)} p50, load ${os.loadavg().map((v) => v.toFixed(1)).join(' ')}`);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fn = new Map<string, number>();
  const area = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const short = n.callFrame.url.replace(/^file:\/\//, '').replace(/.*node_modules\//, 'nm/').replace(/.*\/(server|bench)\//, '$1/');
    const name = `${n.callFrame.functionName || '(anon)'} ${short}:${n.callFrame.lineNumber}`;
    fn.set(name, (fn.get(name) ?? 0) + us);
    const a = !n.callFrame.url ? n.callFrame.functionName || '(native)' : n.callFrame.url.startsWith('node:') ? n.callFrame.url.split('/').slice(0, 2).join('/') : (short.match(/^nm\/((@[^/]+\/)?[^/]+)/)?.[1] ?? short.replace(/\/[^/]*$/, ''));
    area.set(a, (area.get(a) ?? 0) + us);
  }
  const top = (m: Map<string, number>, k: number) =>
    [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, k).map(([name, us]) => `${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${name}`);
  console.log(`sampled ${(total / 1000).toFixed(0)} ms\n-- by area --\n${top(area, 20).join('\n')}\n-- by function (self) --\n${top(fn, 30).join('\n')}`);
  rpc.close();
  await served.close();
  await rt.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error((e as Error).stack ?? e);
    process.exit(1);
  },
);
