// Long tasks in a V8 CPU profile: stretches of consecutive non-idle samples (what held the event loop), each with
// where its time went (our own or a package's nearest frame, inclusive), so a loop gap can be named by its cause.
import type { Profile, ProfileNode } from './cpu-profile';

export interface LongTask {
  /** Start, microseconds since the profile's first sample. */
  startUs: number;
  durUs: number;
  /**
   * Of it, time in samples that came more than 5 ms after the previous one (the sampling interval is ~1 ms): the
   * thread was not running JavaScript to be sampled — descheduled on a busy machine, or blocked in a system call.
   */
  stalledUs: number;
  /** Frames of ours or a package's on the task's stacks, inclusive time in µs, biggest first. */
  frames: Array<[string, number]>;
}

const IDLE = new Set(['(idle)', '(program)', '(garbage collector)']);
const shortUrl = (url: string) => url.replace(/^file:\/\//, '').replace(/.*node_modules\//, 'nm/').replace(/.*\/(server|bench|lib|app)\//, '$1/');

/**
 * Every stretch of consecutive samples that are not "(idle)" lasting at least `minMs` ("(program)" and GC samples
 * inside a stretch count towards it but do not start one). `startUs` is relative to the profile's first sample.
 */
/** Sums samples `[node id, µs]` by the frames of ours or a package's on their stacks (inclusive), biggest first. */
function frameTotals(p: Profile): (samples: Array<[number, number]>) => Array<[string, number]> {
  const byId = new Map<number, ProfileNode>(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const name = (n: ProfileNode) => `${n.callFrame.functionName || '(anon)'} ${shortUrl(n.callFrame.url)}${n.callFrame.url ? `:${n.callFrame.lineNumber}` : ''}`;
  return (samples) => {
    const frames = new Map<string, number>();
    for (const [id, us] of samples) {
      const seen = new Set<string>();
      for (let n = byId.get(id); n; n = parent.has(n.id) ? byId.get(parent.get(n.id)!) : undefined) {
        if (n.callFrame.url && !n.callFrame.url.startsWith('node:')) seen.add(name(n));
        else if (!n.callFrame.url && n.callFrame.functionName && !n.callFrame.functionName.startsWith('(')) seen.add(`${n.callFrame.functionName} (native)`);
        else if (n.callFrame.functionName === '(garbage collector)' || n.callFrame.functionName === '(program)') seen.add(n.callFrame.functionName);
      }
      for (const k of seen) frames.set(k, (frames.get(k) ?? 0) + us);
    }
    return [...frames.entries()].sort((a, b) => b[1] - a[1]);
  };
}

/**
 * Where the time between two instants went (CLOCK_MONOTONIC µs, the clock of the profile's `startTime`, as
 * bench/lib/loop-probe.mjs's gap trace writes them): `framesIn(p)` reads the profile once; the function it returns
 * gives the samples taken in [fromUs, toUs], by frame, and the time in "(idle)" samples — a gap whose samples are
 * idle was not the loop's own work (a descheduled thread).
 */
export function framesIn(p: Profile & { startTime: number }): (fromUs: number, toUs: number) => { frames: Array<[string, number]>; idleUs: number; sampledUs: number } {
  const totals = frameTotals(p);
  const idleIds = new Set(p.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  // Each sample's end time; a sample stands for the dt before it.
  const ends: number[] = [];
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) ends.push((t += p.timeDeltas[i] ?? 0));
  return (fromUs, toUs) => {
    const picked: Array<[number, number]> = [];
    let idleUs = 0;
    let sampledUs = 0;
    p.samples.forEach((id, i) => {
      const end = ends[i]!;
      const dt = p.timeDeltas[i] ?? 0;
      if (end <= fromUs || end - dt >= toUs) return; // the sample (the dt before it) overlaps the span
      sampledUs += dt;
      if (idleIds.has(id)) idleUs += dt;
      else picked.push([id, dt]);
    });
    return { frames: totals(picked), idleUs, sampledUs };
  };
}

export function longTasks(p: Profile, minMs: number): LongTask[] {
  const byId = new Map<number, ProfileNode>(p.nodes.map((n) => [n.id, n]));
  const totals = frameTotals(p);
  const out: LongTask[] = [];
  let t = 0;
  let cur: { start: number; end: number; samples: Array<[number, number]> } | null = null;
  const close = () => {
    if (cur && (cur.end - cur.start) / 1000 >= minMs) {
      const stalledUs = cur.samples.reduce((a, [, us]) => a + (us > 5000 ? us : 0), 0);
      out.push({ startUs: cur.start, durUs: cur.end - cur.start, stalledUs, frames: totals(cur.samples) });
    }
    cur = null;
  };
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    t += dt;
    const fn = byId.get(id)?.callFrame.functionName ?? '';
    if (fn === '(idle)') return close();
    if (!cur) {
      if (IDLE.has(fn) && fn !== '(garbage collector)') return;
      cur = { start: t - dt, end: t, samples: [] };
    }
    cur.end = t;
    cur.samples.push([id, dt]);
  });
  close();
  return out;
}
