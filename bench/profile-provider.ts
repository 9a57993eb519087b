// `npx tsx bench/profile-provider.ts [--scripted] [turns]`: CPU profile of the server during provider-path turns (--cpu-prof), top functions by self time.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { byFunctionAndArea, type Profile, selfTimes, topLines } from './lib/cpu-profile';
import { RpcClient } from './lib/http';
import { benchModelEnv, providerTurnRoundTrip, startBenchModel } from './lib/provider';
import { turnRoundTrip } from './lib/scenarios';
import { makeTempDir, startServer } from './lib/server';
import { ms } from './lib/stats';

const argv = process.argv.slice(2);
const scripted = argv.includes('--scripted');
const turns = Number(argv.find((a) => /^\d+$/.test(a)) ?? 300);

async function main(): Promise<void> {
  const model = await startBenchModel();
  const dataDir = makeTempDir('crosstalk-prof-data-');
  const cwd = makeTempDir('crosstalk-prof-cwd-');
  const profDir = makeTempDir('crosstalk-prof-');
  const token = crypto.randomBytes(18).toString('base64url');
  const server = await startServer({ dataDir, token, cwd, env: benchModelEnv(model), nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`] });
  const rpc = new RpcClient({ baseUrl: server.baseUrl, token });
  try {
    const r = scripted ? await turnRoundTrip(rpc, { warmup: 20, turns }) : await providerTurnRoundTrip(rpc, { warmup: 20, turns });
    const last = model.requests.at(-1);
    if (last) console.log(`last request: ${last.headers['content-length'] ?? '?'} bytes, ${last.body.messages.length} messages, ${last.body.tools?.length ?? 0} tools`);
    console.log(`${scripted ? 'scripted' : 'provider'} turns: p50 ${ms(r.p50)}, p95 ${ms(r.p95)}, mean ${ms(r.mean)}, errors ${r.errors}`);
    if ('scriptedPair' in r) {
      const pair = r as Awaited<ReturnType<typeof providerTurnRoundTrip>>;
      console.log(`interleaved scripted turns: p50 ${ms(pair.scriptedPair.p50)}, p95 ${ms(pair.scriptedPair.p95)}; median pair ratio ${pair.ratioP50.toFixed(2)}×`);
    }
  } finally {
    rpc.close();
    await server.stop();
    await model.close();
  }
  const file = fs.readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile written in ${profDir} (the server must exit cleanly on SIGTERM)`);
  report(JSON.parse(fs.readFileSync(path.join(profDir, file), 'utf8')) as Profile);
  console.log(`profile: ${path.join(profDir, file)}`);
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.rmSync(cwd, { recursive: true, force: true });
}

/** Self time per function, and self time per package/area (node_modules/<pkg>, server/…, node:internal). */
function report(p: Profile): void {
  const t = selfTimes(p);
  const { fn, area } = byFunctionAndArea(t, (url) => url.replace(/^file:\/\//, '').replace(/.*node_modules\//, 'nm/').replace(/.*\/\.next\//, '.next/'));
  const top = (m: Map<string, number>, k: number) => topLines(m, t.total, k);
  const total = t.total;
  console.log(`\nsampled ${(total / 1000).toFixed(0)} ms\n-- by area --`);
  console.log(top(area, 25).join('\n'));
  console.log('-- by function (self) --');
  console.log(top(fn, 40).join('\n'));
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error((e as Error).stack ?? e);
    process.exit(1);
  },
);
