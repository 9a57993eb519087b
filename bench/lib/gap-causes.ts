// What held a server's event loop in its longest gaps: the probe's traced gaps (bench/lib/loop-probe.mjs with
// CROSSTALK_GAP_TRACE) matched with the server's CPU profile (--cpu-prof), printed per phase of a bench.
import fs from 'node:fs';
import path from 'node:path';
import type { Profile } from './cpu-profile';
import { framesIn } from './long-tasks';

/** The gaps the probe traces when a bench profiles the server: this long or longer, ms. */
export const GAP_MS = 15;
/** CLOCK_MONOTONIC µs, the clock of the probe's gap trace and of V8's profiles. */
export const monoUs = () => Number(process.hrtime.bigint() / 1000n);
/** A phase of a bench, by the monotonic clock. */
export type Span = { name: string; fromUs: number; toUs: number };

/** Prints each span's three longest traced gaps (the files `<probe>-gaps.<pid>`) with the frames the server's main-thread profile in `profDir` sampled in them. */
export function gapCauses(probe: string, profDir: string, spans: Span[]): void {
  const dir = path.dirname(probe);
  const base = `${path.basename(probe)}-gaps.`;
  const gaps = fs
    .readdirSync(dir)
    .filter((f) => f.startsWith(base))
    .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean).map((l) => ({ ...(JSON.parse(l) as { from: number; to: number }), pid: f.split('.').pop() })));
  // CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile: the main thread's is thread 0.
  const profiles = new Map(
    fs
      .readdirSync(profDir)
      .filter((f) => f.endsWith('.cpuprofile') && f.split('.')[4] === '0')
      .map((f) => [f.split('.')[3], framesIn(JSON.parse(fs.readFileSync(path.join(profDir, f), 'utf8')) as Profile & { startTime: number })] as const),
  );
  for (const s of spans) {
    const mine = gaps.filter((g) => g.to >= s.fromUs && g.from <= s.toUs).sort((a, b) => b.to - b.from - (a.to - a.from));
    console.log(`gaps ≥ ${GAP_MS} ms in "${s.name}": ${mine.length}`);
    for (const g of mine.slice(0, 3)) {
      const inSpan = g.pid === undefined ? undefined : profiles.get(g.pid);
      if (!inSpan) continue;
      const f = inSpan(g.from, g.to);
      console.log(`  ${((g.to - g.from) / 1000).toFixed(1)} ms (idle ${(f.idleUs / 1000).toFixed(1)} of ${(f.sampledUs / 1000).toFixed(1)} sampled): ${f.frames.slice(0, 12).map(([k, us]) => `${k} ${(us / 1000).toFixed(1)}`).join(' | ')}`);
    }
  }
}
