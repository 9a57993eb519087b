// One seeded fuzz pass over every entry point (JSON-RPC, tRPC, A2A, MCP, channel inbound, login, SSE): no 5xx, no `internal`, no hang, still serving.
// FUZZ_SEED picks the seed; a failure prints its seed and how to replay that one case (FUZZ_ONLY=<entry>:<index>). The long run: npm run bench:fuzz.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer } from '../testing/harness';
import { describeFailures, type Entry, ENTRIES, runFuzz } from '../testing/fuzz';
import { fuzzConfig, fuzzWorld } from '../testing/fuzz-world';

const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed);
/** Cases per entry point: a few seconds in all on a loaded 2-core machine. */
const COUNTS: Record<Entry, number> = { jsonrpc: 300, trpc: 200, a2a: 150, mcp: 120, inbound: 150, login: 80, sse: 80 };
const world = fuzzWorld(TEST_TOKEN);

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ config: fuzzConfig });
});
afterAll(async () => {
  await s?.close();
});

describe('fuzz every entry point', () => {
  it.each(ENTRIES.map((e) => [e] as const))(`%s: seeded malformed, mistyped, deep, huge, oddly encoded and wrongly authorised requests (seed ${SEED})`, { timeout: 180_000 }, async (entry) => {
    const only = process.env.FUZZ_ONLY;
    if (only && !only.startsWith(`${entry}:`)) return;
    const report = await runFuzz({ url: s.url, world, seed: SEED, counts: { [entry]: COUNTS[entry] }, width: 6, timeoutMs: 30_000, only });
    console.log(`fuzz ${entry}: ${report.tried[entry]} requests in ${report.ms} ms (seed ${SEED}): ${JSON.stringify(report.statuses)}`);
    if (report.failures.length) console.error(describeFailures(report));
    expect(report.failures.map((f) => `${f.entry} #${f.index} (seed ${SEED}): ${f.reason}`)).toEqual([]);
    expect(report.tried[entry]).toBeGreaterThan(only ? 0 : COUNTS[entry] * 0.9);
    // Still serving afterwards.
    expect(await s.rpc('status', {})).toHaveProperty('activeRuns');
  });
});
