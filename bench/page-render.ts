// `npx tsx bench/page-render.ts [--cpu-prof]` (N= loads per page, default 40): the room page's server render on the
// built server — a session of 30 Markdown replies (a heading, a list, a code block, a table each), one of 30 plain
// replies and an empty one; wall time and the server's CPU per load (/proc), the HTML's size, and the event loop's
// longest gap while the phase's loads ran one after another (bench/lib/loop-probe.mjs): the page's longest task.
// With --cpu-prof, each kind's longest loop gaps with what the server's profile sampled in them. Figures, not assertions.
import fs from 'node:fs';
import path from 'node:path';
import { CLK_TCK, cpuTicks, processTree } from './lib/proc';
import { afterWarm, makeTempDir, repoRoot, startServer } from './lib/server';
import { RpcClient, turn } from './lib/http';
import { GAP_MS, gapCauses, monoUs, type Span } from './lib/gap-causes';
import { loopWindows } from './lib/loop-windows';
import { median, ms } from './lib/stats';

const dir = makeTempDir('page-render');
const prof = process.argv.includes('--cpu-prof');
const probe = path.join(dir, 'loop-probe');
const server = await startServer({
  dataDir: path.join(dir, 'data'),
  token: 'tk',
  cwd: repoRoot,
  // With a profile, the probe also traces each loop gap of GAP_MS or more, for the profile's samples to name (gapCauses).
  env: { CROSSTALK_LOOP_PROBE: probe, ...(prof ? { CROSSTALK_GAP_TRACE: String(GAP_MS) } : {}) },
  nodeArgs: [`--import=${path.join(repoRoot, 'bench', 'lib', 'loop-probe.mjs')}`, ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${dir}/prof`] : [])],
});
await afterWarm(server);
const rpc = new RpcClient({ baseUrl: server.baseUrl, token: 'tk' });
const md = '# Title\n\nSome **bold** and `code` with a [link](http://x.y).\n\n- one\n- two\n- three\n\n```ts\nconst x = 1;\nfunction f(a: number) { return a + 1; }\n```\n\n| a | b |\n| - | - |\n| 1 | 2 |\n';
for (let i = 0; i < 30; i++) await turn(rpc, 'agent:main:markdown', md + i);
for (let i = 0; i < 30; i++) await turn(rpc, 'agent:main:plain', `just some plain words in a sentence that is long enough to look like a reply ${i}`);

/** CPU ms of the server and its children so far (the launcher re-executes itself). */
const cpuMs = () => cpuTicks(processTree(server.pid)) * (1000 / CLK_TCK);
const N = Number(process.env.N ?? 40);
const load = async (u: string) => (await (await fetch(server.baseUrl + u, { headers: { cookie: 'crosstalk_token=tk' } })).text()).length;
const spans: Span[] = [];
for (const [name, key] of [['30 Markdown replies', 'agent:main:markdown'], ['30 plain replies', 'agent:main:plain'], ['no rows', 'agent:main:empty']]) {
  const u = `/?session=${encodeURIComponent(key!)}`;
  for (let i = 0; i < 5; i++) await load(u);
  const c0 = cpuMs();
  const w0 = Date.now();
  const fromUs = monoUs();
  const t0 = performance.now();
  let bytes = 0;
  for (let i = 0; i < N; i++) bytes += await load(u);
  const wall = (performance.now() - t0) / N;
  const cpu = (cpuMs() - c0) / N;
  await new Promise((r) => setTimeout(r, 250)); // the probe's last window
  const g = loopWindows(probe, { from: w0 + 100, to: Date.now() - 150 }).map((w) => w.max);
  spans.push({ name: name!, fromUs, toUs: monoUs() });
  console.log(`${name}: wall ${wall.toFixed(1)} ms, server CPU ${cpu.toFixed(1)} ms per load, HTML ${Math.round(bytes / N / 1024)} KB, longest loop gap per 100 ms window: median ${ms(median(g))}, max ${ms(g.length ? Math.max(...g) : undefined)}`);
}
await server.stop();
if (prof) {
  gapCauses(probe, path.join(dir, 'prof'), spans);
  console.log(`profiles in ${dir}/prof`);
}
else fs.rmSync(dir, { recursive: true, force: true });
