// Renders bench/turns.ts's results as its BENCHMARKS.md section: each goal beside its figure and the load.
import type { CapacityPoint, StatementCount } from './pg-capacity';
import { mb, median, ms, num, type Summary } from './stats';

/** The bench's sizes (bench/turns.ts, full or `--quick`). */
export interface TurnsSettings { turns: number; warmup: number; concRounds: number; inbound: number; steer: number; starts: number; capSeconds: number; pgTurns: number }

/** Steer-mode callback latency: child's end → the parent's next model request, in all and beyond the model's own time. */
export interface SteerLatency { total: Summary; beyond: Summary; failed: number; firstFailure?: string }

export interface TurnsResults {
  date: string;
  load: { begin: string; end?: string; during: string[] };
  settings: TurnsSettings;
  floorTurns?: Summary;
  sqliteTurns?: Summary & { errors: number };
  pgTurns?: Summary & { errors: number };
  floorConc?: Summary;
  sqliteConc?: Summary & { failed: number };
  pgConc?: Summary & { failed: number };
  inbound?: Summary & { failed: number };
  steer?: SteerLatency;
  starts?: number[];
  idleRssKb?: number[];
  /** RSS ~1.5 s after one page was rendered: the pages' worker running beside the idle gateway (scripts/pages.mjs). */
  pagesRssKb?: number[];
  /** RSS 10 s after that page: idle again with the worker still running. */
  pagesSettledRssKb?: number[];
  afterLoadRssKb?: number;
  afterLoadProcesses?: string;
  /** RSS 10 s after the load (the goal's reading is the one at 1 s, afterLoadRssKb). */
  afterLoadSettledRssKb?: number;
  statements?: Record<string, StatementCount>;
  capacity?: CapacityPoint[];
  errors: Record<string, string>;
}


const x = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined && b > 0 ? a / b : NaN);
const ratio = (v: number) => (Number.isFinite(v) ? `${v.toFixed(2)}×` : 'n/a');
const verdict = (ok: boolean | undefined) => (ok === undefined ? 'n/a' : ok ? 'met' : 'not met');

/** The ratios and medians both the Summary rows and the section report. */
function headline(r: TurnsResults) {
  return {
    conc: x(r.sqliteConc?.p50, r.floorConc?.p50),
    p50: x(r.sqliteTurns?.p50, r.floorTurns?.p50),
    p95: x(r.sqliteTurns?.p95, r.floorTurns?.p95),
    pgRatio: x(r.pgTurns?.p50, r.sqliteTurns?.p50),
    idle: r.idleRssKb?.length ? median(r.idleRssKb) : undefined,
    start: r.starts?.length ? median(r.starts) : undefined,
  };
}

/** The Summary table's rows for these goals (columns: metric | target | crosstalk | vs target | peer). */
export function summaryRows(r: TurnsResults): string[] {
  const { conc, p50, p95, pgRatio, idle, start } = headline(r);
  const at = (step: string) => `load ${r.load.during.find((l) => l.startsWith(`${step}:`))?.slice(step.length + 2) ?? r.load.begin}`;
  const why = (met: boolean | undefined, reason: string) => (met === undefined ? 'n/a' : met ? 'met' : `not met: ${reason}`);
  const tag = (s: string) => `${s} (turns.ts)`;
  return [
    `| ${tag('24.3 inbound channel message → provider request p95')} | ≤ 50 ms | ${ms(r.inbound?.p95)} (p50 ${ms(r.inbound?.p50)}; ${at('inbound')}) | ${why(r.inbound ? r.inbound.p95 <= 50 : undefined, 'see "Latency budgets"')} |  |`,
    `| ${tag('24.4 50 concurrent sessions over the floor (interleaved)')} | ≤ 3× | ${ratio(conc)} (${ms(r.sqliteConc?.p50)} vs ${ms(r.floorConc?.p50)}; ${at('concurrent')}) | ${why(Number.isFinite(conc) ? conc <= 3 : undefined, 'SQLite (native) and Kysely query building are half the CPU of a new session\'s turn, which the floor does not do (bench/profile-concurrent.ts)')} |  |`,
    `| ${tag('24.4 turn p50 / p95 over the floor (interleaved)')} | ≤ 2× / ≤ 3× | ${ratio(p50)} / ${ratio(p95)} (${at('turns')}) | ${why(Number.isFinite(p50) && Number.isFinite(p95) ? p50 <= 2 && p95 <= 3 : undefined, 'p50: the run, its rows and events against a server that stores nothing; the same profile')} |  |`,
    `| ${tag('24.5 RSS after the load / idle')} | ≤ 200 MB / ≤ 150 MB | ${mb(r.afterLoadRssKb)} / ${mb(idle)} (${at('starts')}) | ${why(r.afterLoadRssKb !== undefined && idle !== undefined ? r.afterLoadRssKb <= 200 * 1024 && idle <= 150 * 1024 : undefined, r.afterLoadRssKb !== undefined && r.afterLoadRssKb > 200 * 1024 ? 'after the load (idle is met): caches and heap grown by the run; no heap snapshot was taken in this session' : 'idle')} |  |`,
    `| ${tag('24.5 start to ready (median)')} | ≤ 0.8 s | ${ms(start)} (${at('starts')}) | ${why(start !== undefined ? start <= 800 : undefined, 'at this load the spawn alone takes seconds; bench/profile-start.ts shows Next\'s own loading as the largest part')} |  |`,
    `| ${tag('24.6 PostgreSQL turn p50 over SQLite (interleaved)')} | ≤ 1.5× | ${ratio(pgRatio)} (${at('turns')}) | ${why(Number.isFinite(pgRatio) ? pgRatio <= 1.5 : undefined, 'about 2 round trips a turn already; each costs a PostgreSQL wake-up on the loaded cores; see the capacity model')} |  |`,
    `| ${tag('22.6 steer callback beyond the model, p50 / p99')} | p99 ≤ 1 s | ${ms(r.steer?.beyond.p50)} / ${ms(r.steer?.beyond.p99)} (${at('steer')}) | ${why(r.steer?.beyond.n ? r.steer.beyond.p99 <= 1000 : undefined, 'see "Latency budgets"')} | 5–62 min (a peer's users) |`,
  ];
}

/** Puts the rows at the end of the `## Summary` table, replacing the rows an earlier run of this bench put there. */
export function putSummaryRows(doc: string, rows: string[]): string {
  const lines = doc.split('\n');
  const head = lines.findIndex((l) => l.trim() === '## Summary');
  if (head < 0) return doc;
  let start = head + 1;
  while (start < lines.length && !lines[start]!.startsWith('|')) start++;
  let end = start;
  while (end < lines.length && lines[end]!.startsWith('|')) end++;
  if (start >= lines.length) return doc;
  const kept = lines.slice(start, end).filter((l) => !l.includes(' (turns.ts) |'));
  return [...lines.slice(0, start), ...kept, ...rows, ...lines.slice(end)].join('\n');
}

export function renderTurns(r: TurnsResults, _o: { clkTck: number }): string {
  const L: string[] = [];
  const { conc, p50, p95, pgRatio, idle, start } = headline(r);
  L.push('## Latency budgets against the floor (issue 24 items 3–6, issue 22 item 6)');
  L.push('');
  L.push(
    `Measured by \`bench/turns.ts\` (part of \`npm run bench\`) on ${r.date}, Node ${process.version}, ${'2'} cores shared with other engineers' work: ` +
      `**load average ${r.load.begin} at the start, ${r.load.end ?? 'n/a'} at the end** (1 / 5 / 15 min). ` +
      'Everything below comes from ONE run: a bare node:http server answering the same JSON-RPC requests from memory (`bench/lib/bare.ts`, the floor), ' +
      'the built server on SQLite and on PostgreSQL (each started as `npm start` does), and the OpenAI-wire fake model in the bench process; ' +
      'the targets take turns request by request (sequential turns) or round by round (50 concurrent sessions), so load from other work falls on all of them alike.',
  );
  L.push('');
  L.push('| goal | target | measured | load while measured (1 / 5 / 15 min) | verdict |');
  L.push('| --- | --- | --- | --- | --- |');
  const loadOf = (name: string) => r.load.during.find((l) => l.startsWith(`${name}:`))?.slice(name.length + 2) ?? 'n/a';
  L.push(
    `| 24.3 inbound webhook channel message → the provider's request (arrival in the fake's handler), p95 | ≤ 50 ms | p50 ${ms(r.inbound?.p50)}, p95 ${ms(r.inbound?.p95)}, p99 ${ms(r.inbound?.p99)} (${r.inbound?.n ?? 0} samples, ${r.inbound?.failed ?? 'n/a'} failed) | ${loadOf('inbound')} | ${verdict(r.inbound ? r.inbound.p95 <= 50 : undefined)} |`,
  );
  L.push(
    `| 24.4 50 concurrent sessions (one turn each), median wall against the floor's | ≤ 3× | ${ratio(conc)}: ${ms(r.sqliteConc?.p50)} against ${ms(r.floorConc?.p50)} (${r.sqliteConc?.n ?? 0} rounds each, ${r.sqliteConc?.failed ?? 'n/a'} failed) | ${loadOf('concurrent')} | ${verdict(Number.isFinite(conc) ? conc <= 3 : undefined)} |`,
  );
  L.push(`| 24.4 turn p50 against the floor's | ≤ 2× | ${ratio(p50)}: ${ms(r.sqliteTurns?.p50)} against ${ms(r.floorTurns?.p50)} | ${loadOf('turns')} | ${verdict(Number.isFinite(p50) ? p50 <= 2 : undefined)} |`);
  L.push(`| 24.4 turn p95 against the floor's | ≤ 3× | ${ratio(p95)}: ${ms(r.sqliteTurns?.p95)} against ${ms(r.floorTurns?.p95)} | ${loadOf('turns')} | ${verdict(Number.isFinite(p95) ? p95 <= 3 : undefined)} |`);
  L.push(`| 24.5 RSS after the load (process tree), 1 s after it | ≤ 200 MB | ${mb(r.afterLoadRssKb)}${r.afterLoadSettledRssKb !== undefined ? ` (10 s after it: ${mb(r.afterLoadSettledRssKb)})` : ''} | ${loadOf('steer')} | ${verdict(r.afterLoadRssKb !== undefined ? r.afterLoadRssKb <= 200 * 1024 : undefined)} |`);
  L.push(`| 24.5 RSS idle, after the warm-up (~1.5 s after ready, no page asked for; median of ${r.idleRssKb?.length ?? 0}) | ≤ 150 MB | ${mb(idle)} (${(r.idleRssKb ?? []).map((k) => mb(k)).join(', ')}) | ${loadOf('starts')} | ${verdict(idle !== undefined ? idle <= 150 * 1024 : undefined)} |`);
  if (r.pagesRssKb?.length) {
    const settled = r.pagesSettledRssKb?.length ? median(r.pagesSettledRssKb) : undefined;
    L.push(`| 24.5 RSS idle with the pages' worker running, 10 s after one page (median of ${r.pagesSettledRssKb?.length ?? 0}; 1.5 s after it: ${mb(median(r.pagesRssKb))}); the worker stops after CROSSTALK_PAGES_IDLE_MS without pages | (≤ 150 MB idle) | ${mb(settled)} (${(r.pagesSettledRssKb ?? []).map((k) => mb(k)).join(', ')}; 1.5 s after the page: ${r.pagesRssKb.map((k) => mb(k)).join(', ')}) | ${loadOf('starts')} | ${verdict(settled !== undefined ? settled <= 150 * 1024 : undefined)} |`);
  }
  L.push(`| 24.5 start to ready (spawn → first authorized request, existing store, median of ${r.starts?.length ?? 0}) | ≤ 0.8 s | ${ms(start)} (${(r.starts ?? []).map((v) => ms(v)).join(', ')}) | ${loadOf('starts')} | ${verdict(start !== undefined ? start <= 800 : undefined)} |`);
  L.push(`| 24.6 PostgreSQL turn p50 against a SQLite turn (interleaved) | ≤ 1.5× | ${ratio(pgRatio)}: ${ms(r.pgTurns?.p50)} against ${ms(r.sqliteTurns?.p50)} (p95 ${ms(r.pgTurns?.p95)} / ${ms(r.sqliteTurns?.p95)}) | ${loadOf('turns')} | ${verdict(Number.isFinite(pgRatio) ? pgRatio <= 1.5 : undefined)} |`);
  L.push(
    `| 22.6 steer: child's end → the parent's next model request, beyond the model's own time, p50 / p99 | p99 ≤ 1 s | ${ms(r.steer?.beyond.p50)} / ${ms(r.steer?.beyond.p99)} (end to request in all: ${ms(r.steer?.total.p50)} / ${ms(r.steer?.total.p99)}; ${r.steer?.beyond.n ?? 0} samples, ${r.steer?.failed ?? 'n/a'} failed${r.steer?.firstFailure ? `: ${r.steer.firstFailure}` : ''}) | ${loadOf('steer')} | ${verdict(r.steer?.beyond.n ? r.steer.beyond.p99 <= 1000 : undefined)} |`,
  );
  L.push('');
  L.push('**The same run, all figures** (sequential turns: `agent` then `agent.wait` on one session; concurrent: 50 new sessions at once, wall time until every `agent.wait` answered):');
  L.push('');
  L.push('| target | turn p50 | turn p95 | turn p99 | 50 concurrent, median wall | 50 concurrent, p95 wall |');
  L.push('| --- | --- | --- | --- | --- | --- |');
  for (const [name, t, c] of [
    ['floor (bare node:http, answers from memory)', r.floorTurns, r.floorConc],
    ['crosstalk, SQLite', r.sqliteTurns, r.sqliteConc],
    ['crosstalk, PostgreSQL', r.pgTurns, r.pgConc],
  ] as const) {
    L.push(`| ${name} | ${ms(t?.p50)} | ${ms(t?.p95)} | ${ms(t?.p99)} | ${ms(c?.p50)} | ${ms(c?.p95)} |`);
  }
  L.push('');
  L.push(`RSS after the load: ${r.afterLoadProcesses ?? 'n/a'}. Load average at each step: ${r.load.during.join('; ')}.`);
  L.push('');
  L.push(
    'Inbound: a signed POST to `/api/channels/webhook` (the generic webhook channel, `dmPolicy: open`, routed to an agent whose model is `openai:` on the fake), ' +
      'timed from just before the POST to the moment the fake\'s handler is called for that message (both clocks are the bench process\'s). 20 peers in turn, each message a new turn.',
  );
  L.push(
    'Steer: a parent session (model on the fake) calls `delegate_agent` detached on `researcher` (scripted, `/sleep 40`); its next model step takes 300 ms (the model\'s own time); ' +
      'the child ends inside that step and its callback is steered into the run; the figure is the arrival of the request that carries the callback minus the later of the child\'s `lifecycle end` (server ts, 1 ms) and the end of the parent\'s step.',
  );
  L.push('');
  const st = r.statements?.scripted;
  if (st) {
    L.push('### PostgreSQL capacity model');
    L.push('');
    L.push(
      `**Per turn** (a scripted turn, \`agent\` + \`agent.wait\`, in-process runtime on the shared PostgreSQL 15, ${st.turns} turns after warm-up; statements counted at the client by wrapping node-postgres's \`Client.query\` — ` +
        'pg_stat_statements is not in `shared_preload_libraries` of the shared server and it was not restarted; server CPU from /proc of the backends whose `application_name` is this runtime\'s):',
    );
    L.push('');
    L.push('| per turn | value |');
    L.push('| --- | --- |');
    L.push(`| statements = round trips (node-postgres sends one statement per round trip; no pipelining) | ${num(st.roundTrips, 1)} |`);
    L.push(`| of which transaction control (BEGIN / COMMIT / …) | ${num(st.txControl, 1)} |`);
    L.push(`| background (liveness sweep, LISTEN, job polling), subtracted | ${num(st.idlePerSecond, 1)} statements/s |`);
    L.push(`| PostgreSQL backend CPU | ${num(st.pgCpuMsPerTurn, 2)} ms |`);
    L.push(`| gateway + bench client CPU (one process) | ${num(st.gatewayCpuMsPerTurn, 2)} ms |`);
    L.push(`| turn p50 / p95 in that loop | ${ms(st.turn.p50)} / ${ms(st.turn.p95)} |`);
    L.push('');
    L.push(`Statement shapes (first words) per turn: ${st.shapes.map((s) => `\`${s.shape}\` ×${num(s.perTurn, 2)}`).join(', ')}.`);
    L.push('');
  }
  if (r.capacity?.length) {
    L.push('**Turns per second per PostgreSQL core** (N `npm start` processes on one schema, 4 clients in all looping scripted turns, CPU from /proc: PostgreSQL = the backends of these processes, gateway = their process trees):');
    L.push('');
    L.push('| gateway processes | turns/s (wall) | p50 / p95 | PostgreSQL CPU s | turns per PostgreSQL core-second | gateway CPU s | turns per gateway core-second |');
    L.push('| --- | --- | --- | --- | --- | --- | --- |');
    for (const c of r.capacity) {
      L.push(`| ${c.processes} | ${num(c.turnsPerSecond, 0)} | ${ms(c.p50)} / ${ms(c.p95)} | ${num(c.pgCpuSeconds, 2)} | ${num(c.turnsPerPgCoreSecond, 0)} | ${num(c.gatewayCpuSeconds, 2)} | ${num(c.turnsPerGatewayCoreSecond, 0)} |`);
    }
    L.push('');
    const worstPg = Math.min(...r.capacity.map((c) => c.turnsPerPgCoreSecond).filter(Number.isFinite));
    const worstGw = Math.min(...r.capacity.map((c) => c.turnsPerGatewayCoreSecond).filter(Number.isFinite));
    if (Number.isFinite(worstPg) && Number.isFinite(worstGw)) {
      const pgCores = 10_000 / worstPg;
      const gwCores = 10_000 / worstGw;
      L.push(
        `**Extrapolated to 10,000 turns/s**: PostgreSQL ≈ ${num(pgCores, 0)} cores busy (10,000 ÷ ${num(worstPg, 0)}, the worst of the three points), ` +
          `so ≈ ${num(Math.ceil(pgCores / 0.6), 0)} cores provisioned at 60% utilisation; gateways ≈ ${num(gwCores, 0)} cores busy (10,000 ÷ ${num(worstGw, 0)}), ` +
          `≈ ${num(Math.ceil(gwCores / 0.6), 0)} single-threaded processes at 60% (one Node process uses about one core).`,
      );
      L.push('');
      L.push('Assumptions: the turn is this bench\'s scripted turn (one model step, no tools, one user + one assistant row, its events, no webhooks or callbacks); a provider turn adds the model\'s HTTP time on the gateway and nothing on PostgreSQL, tool steps add one step\'s statements each; ' +
        'PostgreSQL CPU per turn stays what it is here as it scales up (one primary, no replicas or sharding: every turn writes, so it is all on the primary; 10,000 turns/s writes ≈ 10,000 × 4.9 KB/turn ≈ 50 MB/s of rows and WAL (storage per turn above), which a single NVMe primary sustains but the WAL and checkpoints then dominate I/O); ' +
        'the connection count stays within one pool per process (max 10) — hundreds of gateway processes need PgBouncer in transaction mode, which breaks LISTEN/NOTIFY and the named prepared statements, so that would be work; ' +
        'lock contention does not grow with processes (the cluster section shows coordination flat at 1, 2 and 4 processes, not at 100); ' +
        'measured on 2 shared cores where the gateways, PostgreSQL and the load generator compete, so per-core figures are pessimistic for a dedicated server and the 2-vs-4-process points mostly show scheduling, not PostgreSQL.');
      L.push('');
    }
  }
  if (Object.keys(r.errors).length) {
    L.push(`Failed in this run: ${Object.entries(r.errors).map(([k, v]) => `${k} (${v.split('\n')[0]})`).join('; ')}.`);
    L.push('');
  }
  return L.join('\n');
}
