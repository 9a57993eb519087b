// bench:scale's results and its BENCHMARKS.md section ("Scale: 100,000 sessions"): each goal beside its figure, per store.
import type { BenchResults } from './report';
import { percentile } from './stats';

/** A phase's loop windows: how many, how many with a gap over 20 ms (and of them with a GC pause over 10 ms), p99. */
export interface WindowSpread {
  windows: number;
  over20: number;
  over20gc: number;
  p99: number;
}

export interface ScaleResult {
  store: 'sqlite' | 'postgres';
  sessions: number;
  messages: number;
  seededS: number;
  /** Spawn → the first answered request, on the seeded store. */
  startS: number;
  /** Latencies (ms) of each read, one entry per call. */
  rpc: Record<string, number[]>;
  /** The event loop's longest delay (ms) in each phase (perf_hooks.monitorEventLoopDelay in the server). */
  loop: Record<string, number>;
  /** The longest garbage-collection pause (ms) in each phase: how much of its longest gap V8 made. */
  loopGc?: Record<string, number>;
  /** Per phase, how the probe's 100 ms windows spread (bench/scale.ts loopOver). */
  loopSpread?: Record<string, WindowSpread>;
  room: Record<string, number[]>;
  checks: Record<string, string>;
  runs?: number;
  machine: BenchResults['machine'];
  profile?: string;
}

const q = (xs: number[] | undefined, n: number) => (xs?.length ? percentile(xs.filter(Number.isFinite), n) : NaN);
const ms = (v: number) => (Number.isFinite(v) ? `${v < 10 ? v.toFixed(1) : Math.round(v)} ms` : 'n/a');
/** ` (GC ≤ n ms)`: the phase's longest garbage-collection pause, when the probe recorded one. */
const gcNote = (r: ScaleResult, phase: string) => (r.loopGc?.[phase] ? ` (GC ≤ ${ms(r.loopGc[phase])})` : '');
const verdict = (v: number, goal: number) => (!Number.isFinite(v) ? 'not measured' : v <= goal ? 'met' : 'not met');

interface Goal {
  what: string;
  goal: string;
  limit: number;
  figure: (r: ScaleResult) => number;
  detail: (r: ScaleResult) => string;
}

const GOALS: Goal[] = [
  { what: 'room interactive (navigation → composer, live stream, session list), 50 runs streaming', goal: '≤ 1.5 s', limit: 1500, figure: (r) => Math.max(...(r.room.loads ?? [NaN])), detail: (r) => `median ${ms(q(r.room.loads, 50))}, max ${ms(Math.max(...(r.room.loads ?? [NaN])))} (${r.room.loads?.length ?? 0} loads)` },
  { what: 'session switch (click → the other transcript on screen)', goal: 'p95 ≤ 150 ms', limit: 150, figure: (r) => q(r.room.switches, 95), detail: (r) => `p50 ${ms(q(r.room.switches, 50))}, p95 ${ms(q(r.room.switches, 95))} (${r.room.switches?.length ?? 0})` },
  { what: 'keystroke in the composer (keydown → next frame)', goal: 'p95 ≤ 50 ms', limit: 50, figure: (r) => q(r.room.keys, 95), detail: (r) => `p50 ${ms(q(r.room.keys, 50))}, p95 ${ms(q(r.room.keys, 95))} (${r.room.keys?.length ?? 0} keys)` },
  { what: 'sessions.search, 50 runs streaming (JSON-RPC, limit 20)', goal: 'p95 ≤ 200 ms', limit: 200, figure: (r) => q(r.room.searchLoaded, 95), detail: (r) => `p50 ${ms(q(r.room.searchLoaded, 50))}, p95 ${ms(q(r.room.searchLoaded, 95))}; quiet: p95 ${ms(q(r.rpc.search, 95))}` },
  { what: 'the agent board opening in the room (click → groups on screen)', goal: '≤ 300 ms', limit: 300, figure: (r) => Math.max(...(r.room.boards ?? [NaN])), detail: (r) => `median ${ms(q(r.room.boards, 50))}, max ${ms(Math.max(...(r.room.boards ?? [NaN])))} (${r.room.boards?.length ?? 0} opens)` },
  { what: '`runs.board` (issue 22 item 7)', goal: 'p95 ≤ 50 ms', limit: 50, figure: (r) => q(r.rpc.board, 95), detail: (r) => `p50 ${ms(q(r.rpc.board, 50))}, p95 ${ms(q(r.rpc.board, 95))}` },
  { what: '`deliveries.list` (issue 22 item 7)', goal: 'p95 ≤ 50 ms', limit: 50, figure: (r) => q(r.rpc.deliveries, 95), detail: (r) => (r.rpc.deliveries ? `p50 ${ms(q(r.rpc.deliveries, 50))}, p95 ${ms(q(r.rpc.deliveries, 95))}` : (r.checks.deliveries ?? 'n/a')) },
  { what: 'event loop, longest gap while 50 runs stream and the room is open', goal: '≤ 20 ms', limit: 20, figure: (r) => r.loop['all of the streaming phase'] ?? NaN, detail: (r) => Object.entries(r.loop).filter(([k]) => k.includes('streaming')).map(([k, v]) => `${k} ${ms(v)}${gcNote(r, k)}`).join('; ') },
  { what: 'event loop, longest gap while status, sessions.usage, sessions.list and search run', goal: '≤ 20 ms', limit: 20, figure: (r) => Math.max(...['status', 'sessions.usage', 'sessions.list', 'sessions.list (paging)', 'sessions.search'].map((k) => r.loop[k] ?? NaN)), detail: (r) => ['idle', 'status', 'sessions.usage', 'sessions.list', 'sessions.list (paging)', 'sessions.search', 'runs.board', 'deliveries.list'].filter((k) => k in r.loop).map((k) => `${k} ${ms(r.loop[k]!)}`).join('; ') },
];

export function scaleSection(results: ScaleResult[]): string {
  const lines: string[] = ['## Scale: 100,000 sessions (issue 24 items 1–2, issue 22 item 7)', ''];
  for (const r of results) {
    const m = r.machine;
    lines.push(
      `**${r.store === 'sqlite' ? 'SQLite' : 'PostgreSQL 15'}** — \`npm run bench:scale\` on ${m.nproc} × ${m.cpu}, load average ${m.loadAvg} at the end, Node ${m.node ?? process.versions.node}: ${r.sessions.toLocaleString()} sessions, ${r.messages.toLocaleString()} messages, ${(r.sessions * 5).toLocaleString()} runs and as many model_usage rows (seeded in ${Math.round(r.seededS)} s; the newest 10,000 sessions in delegate trees three deep), the built app started in ${r.startS.toFixed(1)} s on it, ${r.runs ?? 0} streamed runs finished during the room's measurements. The machine is shared with other engineers' work: figures are an upper bound.`,
      '',
      '| goal | target | measured | |',
      '| --- | --- | --- | --- |',
      ...GOALS.map((g) => `| ${g.what} | ${g.goal} | ${g.detail(r)} | ${verdict(g.figure(r), g.limit)} |`),
      `| status / sessions.usage / sessions.list (first page; paging on) — quiet | — | p95 ${ms(q(r.rpc.status, 95))} / ${ms(q(r.rpc.usage, 95))} / ${ms(q(r.rpc.list, 95))}; ${ms(q(r.rpc.listDeep, 95))} | |`,
      '',
      `The bench's own checks: ${Object.entries(r.checks).filter(([k]) => k !== 'deliveries').map(([k, v]) => `${k}: ${v}`).join('; ')}.${r.profile ? ` Server CPU profile: ${r.profile}.` : ''}`,
      '',
    );
  }
  return lines.join('\n');
}
