// `npm run bench:fuzz`: the long seeded fuzz run over every entry point (server/testing/fuzz.ts; the short one is in `npm test`).
// No 5xx, no `internal`, no hang (per-request timeout), and the server still serves after each entry point. A failure
// prints its seed and the one-case replay (FUZZ_SEED=… FUZZ_ONLY=<entry>:<index> npx vitest run server/http/fuzz.test.ts).
// Writes its figures to BENCHMARKS.md between the `fuzz` markers (unless --no-md); exits 1 on any failure.
//   npx tsx bench/fuzz.ts [--cases N] [--seed S] [--no-md]        (TEST_STORE=postgres: on PostgreSQL)
import os from 'node:os';
import path from 'node:path';
import { startTestServer, TEST_TOKEN } from '../server/testing/harness';
import { describeFailures, type Entry, ENTRIES, runFuzz } from '../server/testing/fuzz';
import { fuzzConfig, fuzzWorld } from '../server/testing/fuzz-world';
import { markedBlock, writeMarked } from './lib/sections';
import { repoRoot } from './lib/server';

const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const CASES = Number(arg('cases') ?? process.env.FUZZ_CASES ?? 3000);
const SEED = Number(arg('seed') ?? process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const log = (m: string) => console.log(`[bench:fuzz] ${m}`);

const s = await startTestServer({ config: fuzzConfig });
const world = fuzzWorld(TEST_TOKEN);
log(`seed ${SEED}, ${CASES} cases per entry point, store ${s.rt.store.dialect}`);
const rows: string[] = [];
let failed = 0;
const started = Date.now();
for (const entry of ENTRIES) {
  const r = await runFuzz({ url: s.url, world, seed: SEED, counts: { [entry]: CASES } as Partial<Record<Entry, number>>, width: 8, timeoutMs: 30_000 });
  let alive = true;
  try {
    await s.rpc('status', {});
  } catch {
    alive = false;
  }
  failed += r.failures.length + (alive ? 0 : 1);
  const statuses = Object.entries(r.statuses).sort().map(([k, n]) => `${k.split(' ')[1]}×${n}`).join(' ');
  log(`${entry}: ${r.tried[entry]} requests in ${(r.ms / 1000).toFixed(1)} s, ${r.failures.length} failures, ${alive ? 'still serving' : 'NOT SERVING'} (${statuses})`);
  if (r.failures.length) console.error(describeFailures(r, 50));
  rows.push(`| ${entry} | ${r.tried[entry]} | ${(r.ms / 1000).toFixed(1)} | ${r.failures.length} | ${alive ? 'yes' : '**no**'} | ${statuses} |`);
}
await s.close();
const total = ((Date.now() - started) / 1000).toFixed(0);
log(failed ? `${failed} failures (seed ${SEED})` : `no failures in ${total} s (seed ${SEED})`);

if (!process.argv.includes('--no-md')) {
  const body = [
    '### Fuzz (`npm run bench:fuzz`)',
    '',
    `Seed ${SEED}, ${CASES} seeded requests per entry point (malformed, mistyped, nested past 64 levels, around the size caps, oddly encoded, wrongly authorised), 8 in flight, ${s.rt.store.dialect}, ${total} s in all (load average ${os.loadavg()[0]!.toFixed(0)} on ${os.cpus().length} cores). A failure is a 5xx, an \`internal\` error (-32603), no answer within 30 s, or a server that no longer answers \`status\` afterwards. Status 0 is node's HTTP server closing the connection on a request line or headers past its 16 KiB limit (as 431 is).`,
    '',
    '| entry point | requests | seconds | failures | still serving | HTTP statuses seen |',
    '| --- | ---: | ---: | ---: | --- | --- |',
    ...rows,
  ].join('\n');
  writeMarked(path.join(repoRoot, 'BENCHMARKS.md'), 'fuzz', body);
  log('BENCHMARKS.md updated (fuzz section)');
}
process.exit(failed ? 1 : 0);
