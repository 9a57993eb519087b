// `npx tsx bench/profile-concurrent.ts [rounds]`: where 50 concurrent sessions spend their time — an in-process runtime (SQLite, unbundled sources, readable names) CPU-profiled with the inspector while rounds of 50 new sessions take one turn each; self time by function and by area.
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { createRuntime } from '../server/boot';
import { parseRawConfig, resolveConfig } from '../server/config';
import { serve } from '../server/http/node-server';
import { createLogger } from '../server/logger';
import { byFunctionAndArea, type Profile, selfTimes, topLines } from './lib/cpu-profile';
import { RpcClient, turn } from './lib/http';
import { ms, summarize } from './lib/stats';

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
  const t = selfTimes(profile);
  const { fn, area } = byFunctionAndArea(t, (url) => url.replace(/^file:\/\//, '').replace(/.*node_modules\//, 'nm/').replace(/.*\/(server|bench)\//, '$1/'));
  const top = (m: Map<string, number>, k: number) => topLines(m, t.total, k);
  const total = t.total;
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
