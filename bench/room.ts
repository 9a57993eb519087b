// `npm run bench:room`: the room under load (issue 15). Seeds 10,000 sessions and 1,000,000 messages, keeps 50 runs
// streaming, and measures in real Chromium: time to interactive, session switch, composer keystrokes, sessions.list
// requests per event, and sessions.search latency. Writes its own section of BENCHMARKS.md (figures, never assertions).
// Flags: --quick (100,000 messages, fewer samples; prints only), --keep (keep the temp dir), --reuse=DIR (a dir kept
// by an earlier --keep run: skip the seed, reuse its store, keep it; prints only). Bounded by a watchdog.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Page } from '@playwright/test';
import { launchChromium, loggedInContext } from './lib/browser';
import { RpcClient, subscribeSse } from './lib/http';
import { machineInfo } from './lib/report';
import { streamLoad } from './lib/room-load';
import { keystrokes } from './lib/room-keys';
import { ROOM_READY_SCRIPT, type RoomReadyMarks, sessionSwitchScript, type SwitchTimes } from './lib/room-ready';
import { markedBlock, writeMarked } from './lib/sections';
import { makeTempDir, repoRoot, type ServerHandle, startServer } from './lib/server';
import { percentile, sleep } from './lib/stats';
import { word, zipfWords } from './lib/zipf-words';

const args = new Set(process.argv.slice(2));
const quick = args.has('--quick');
const reuse = process.argv.find((a) => a.startsWith('--reuse='))?.slice('--reuse='.length);
const keep = args.has('--keep') || !!reuse;
const SESSIONS = 10_000;
const MESSAGES = quick ? 100_000 : 1_000_000;
const STREAMING = 50;
const SAMPLES = quick ? { load: 3, switch: 10, keys: 60, search: 30 } : { load: 5, switch: 30, keys: 200, search: 100 };
const WATCHDOG_MS = 25 * 60_000;
const TOKEN = 'bench-room-token';

let server: ServerHandle | undefined;
const watchdog = setTimeout(() => {
  console.error('bench:room watchdog: giving up');
  void server?.stop().finally(() => process.exit(1));
}, WATCHDOG_MS);

// ── seed ────────────────────────────────────────────────────────────────────
// Made-up words drawn with a Zipf law, like real text (bench/lib/zipf-words.ts).
const { zipfWord, sentence } = zipfWords(42);

function seedStore(dataDir: string): { ms: number; rows: number } {
  const t0 = performance.now();
  const db = new Database(path.join(dataDir, 'crosstalk.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  const perSession = MESSAGES / SESSIONS;
  const insertSession = db.prepare(
    `insert into sessions (key, agent_id, kind, spawn_depth, created_at, last_activity_at, message_count, bytes, status)
     values (?, ?, 'other', 0, ?, ?, ?, 0, 'idle')`,
  );
  const insertMessage = db.prepare(
    `insert into messages (session_key, role, kind, content, created_at, run_id, author_type, author_id, tool_name, tool_call_id, tool_args, tool_result)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const base = Date.parse('2026-01-01T00:00:00Z');
  let rows = 0;
  const batch = db.transaction((from: number, to: number) => {
    for (let s = from; s < to; s++) {
      const agent = ['main', 'researcher', 'writer'][s % 3]!;
      const key = `agent:${agent}:bench-${s}`;
      const t = new Date(base + s * 60_000).toISOString();
      insertSession.run(key, agent, t, t, perSession);
      for (let i = 0; i < perSession; i++) {
        const slot = i % 10;
        const run = `bench-${s}-${Math.floor(i / 2)}`;
        if (slot === 6) insertMessage.run(key, 'assistant', 'tool_call', '', t, run, 'agent', agent, 'exec', `c-${s}-${i}`, JSON.stringify({ command: `grep ${zipfWord()} notes.txt` }), null);
        else if (slot === 7) insertMessage.run(key, 'tool', 'tool_result', '', t, run, 'system', 'exec', 'exec', `c-${s}-${i - 1}`, JSON.stringify({ command: 'grep' }), JSON.stringify({ status: 'ok', exitCode: 0, stdout: `${sentence(10)}\n`, stderr: '' }));
        else insertMessage.run(key, i % 2 ? 'assistant' : 'user', 'message', sentence(12 + (i % 7)), t, run, i % 2 ? 'agent' : 'user', i % 2 ? agent : 'user', null, null, null, null);
        rows++;
      }
    }
  });
  for (let s = 0; s < SESSIONS; s += 500) {
    batch(s, Math.min(SESSIONS, s + 500));
    process.stdout.write(`\rseeding ${rows.toLocaleString()} / ${MESSAGES.toLocaleString()} messages`);
  }
  process.stdout.write('\n');
  db.close();
  return { ms: performance.now() - t0, rows };
}

// ── browser measurements ────────────────────────────────────────────────────
/**
 * Navigation start → the frame after the composer, the live stream and the session list are all there, in the page's
 * own clock (bench/lib/room-ready.ts); Playwright's waits then check the same three things its own way.
 */
async function timeToInteractive(page: Page, url: string): Promise<{ inPage: number; polled: number }> {
  await page.addInitScript(ROOM_READY_SCRIPT);
  const t0 = performance.now();
  await page.goto(url);
  await page.getByRole('textbox', { name: 'Message', exact: true }).waitFor();
  await page.locator('[data-testid="status-bar"][data-connection="connected"]').waitFor();
  await page.locator('[data-testid="session-item"]').first().waitFor();
  const polled = performance.now() - t0;
  await page.waitForFunction('window.__roomReady?.all !== undefined');
  return { inPage: ((await page.evaluate('window.__roomReady')) as RoomReadyMarks).all, polled };
}

/** Click → the new session's pane shows its transcript rows, timed inside the page (bench/lib/room-ready.ts). */
async function switchTo(page: Page, key: string): Promise<number> {
  return ((await page.evaluate(sessionSwitchScript(key))) as SwitchTimes).rows;
}

const fmt = (v: number) => (Number.isFinite(v) ? `${Math.round(v)} ms` : 'n/a');
const p = (xs: number[], q: number) => percentile(xs.filter(Number.isFinite), q);

async function main() {
  const dir = reuse ? path.resolve(reuse) : makeTempDir('crosstalk-bench-room-');
  const dataDir = path.join(dir, 'data');
  console.log(`bench:room in ${dir} (${quick ? 'quick' : 'full'}: ${SESSIONS.toLocaleString()} sessions, ${MESSAGES.toLocaleString()} messages, ${STREAMING} runs streaming)`);
  let seeded = { ms: NaN, rows: 0 };
  if (reuse) {
    console.log(`reusing the store seeded in ${dataDir}`);
  } else {
    // Migrations run on a first start; then the store is seeded with the server stopped.
    server = await startServer({ dataDir, token: TOKEN, cwd: dir });
    await server.stop();
    seeded = seedStore(dataDir);
    console.log(`seeded ${seeded.rows.toLocaleString()} messages in ${(seeded.ms / 1000).toFixed(1)} s`);
  }
  server = await startServer({ dataDir, token: TOKEN, cwd: dir, readyTimeoutMs: 120_000 });
  const rpc = new RpcClient({ baseUrl: server.baseUrl, token: TOKEN, timeoutMs: 60_000 });
  // STREAMING runs in flight the whole time, each a few seconds of "thinking" then a streamed reply.
  const load = streamLoad(rpc, STREAMING, sentence(60));
  await sleep(2_000);

  const browser = await launchChromium();
  const results: Record<string, number | string> = {};
  try {
    const context = await loggedInContext(browser, server.baseUrl, TOKEN, { timeoutMs: 60_000, bypassCSP: true });

    // 1. Interactive: navigation → composer, live stream and session list all there.
    const loads: number[] = [];
    const polledLoads: number[] = [];
    for (let i = 0; i < SAMPLES.load; i++) {
      const page = await context.newPage();
      const t = await timeToInteractive(page, `${server.baseUrl}/?session=agent:main:live-0`);
      loads.push(t.inPage);
      polledLoads.push(t.polled);
      await page.close();
    }
    console.log(`interactive (in page): ${loads.map(fmt).join(', ')}`);

    const page = await context.newPage();
    await timeToInteractive(page, `${server.baseUrl}/?session=agent:main:live-0`);

    // 2. sessions.list requests vs events while the open session streams (10 s).
    let listRequests = 0;
    page.on('request', (r) => {
      if (r.url().includes('sessions.list')) listRequests++;
    });
    let events = 0;
    const sub = await subscribeSse(`${server.baseUrl}/api/gateway/events?sessionKey=agent:main:live-0`, TOKEN, () => events++);
    const watchMs = 10_000;
    await sleep(watchMs);
    sub.close();
    const listDuringWatch = listRequests;

    // 3. Session switch between seeded sessions listed in the sidebar (100 messages each), and back.
    const keys = await page.$$eval('[data-testid="session-item"]', (els) => els.map((e) => e.getAttribute('data-session-key')!).filter((k) => k.includes(':bench-')));
    const switches: number[] = [];
    for (let i = 0; i < SAMPLES.switch && keys.length > 1; i++) switches.push(await switchTo(page, keys[i % Math.min(keys.length, 20)]!));

    // 4. Keystrokes in the composer, with 50 runs streaming.
    await switchTo(page, keys[0]!);
    const keyTimes = await keystrokes(page, SAMPLES.keys);

    // 5. sessions.search at this size: rare, middling and common words, and two-word queries.
    const queries = Array.from({ length: SAMPLES.search }, (_, i) => {
      const kind = i % 4;
      return kind === 0 ? word(5000 + i * 37 % 5000) : kind === 1 ? word(200 + (i * 13) % 800) : kind === 2 ? word(i % 50) : `${word(100 + i)} ${word(3000 + i * 7)}`;
    });
    const searchTimes: number[] = [];
    for (const q of queries) {
      const t0 = performance.now();
      await rpc.call('sessions.search', { query: q, limit: 20 });
      searchTimes.push(performance.now() - t0);
    }
    const runs = await load.stop();
    await context.close();

    Object.assign(results, {
      interactiveMedian: p(loads, 50),
      interactiveMax: Math.max(...loads),
      interactivePolled: p(polledLoads, 50),
      switchP50: p(switches, 50),
      switchP95: p(switches, 95),
      keyP50: p(keyTimes, 50),
      keyP95: p(keyTimes, 95),
      keys: keyTimes.length,
      events,
      listRequests: listDuringWatch,
      watchMs,
      searchP50: p(searchTimes, 50),
      searchP95: p(searchTimes, 95),
      searchMax: Math.max(...searchTimes),
      runs,
      seedS: seeded.ms / 1000,
    });
  } finally {
    await browser.close();
    rpc.close();
    await server.stop();
    clearTimeout(watchdog);
    if (!keep) fs.rmSync(dir, { recursive: true, force: true });
  }

  const r = results as Record<string, number>;
  const m = machineInfo();
  const body = [
    '## Room under load (issue 15)',
    '',
    `\`npm run bench:room\` on ${m.nproc} × ${m.cpu} (load average ${m.loadAvg} at the end), Node ${process.versions.node}, SQLite store: ${SESSIONS.toLocaleString()} sessions and ${MESSAGES.toLocaleString()} messages seeded (${r.seedS!.toFixed(0)} s), ${STREAMING} runs streaming the whole time (${r.runs} runs finished during the measurements), real Chromium. The machine is shared with other work: figures are an upper bound.`,
    '',
    '| what | target | measured |',
    '| --- | --- | --- |',
    `| room interactive (navigation → composer, live stream, session list) | ≤ 1.5 s | median ${fmt(r.interactiveMedian!)}, max ${fmt(r.interactiveMax!)} (${SAMPLES.load} loads; in-page clock from navigation start; Playwright's polling waits: median ${fmt(r.interactivePolled!)}) |`,
    `| session switch (click → the other transcript's rows on screen) | ≤ 150 ms | p50 ${fmt(r.switchP50!)}, p95 ${fmt(r.switchP95!)} (${SAMPLES.switch} switches) |`,
    `| keystroke in the composer (keydown → next frame) | p95 ≤ 50 ms | p50 ${fmt(r.keyP50!)}, p95 ${fmt(r.keyP95!)} (${r.keys} keys) |`,
    `| sessions.list requests while the open session streams | no refetch per event | ${r.listRequests} requests for ${r.events} events in ${r.watchMs! / 1000} s (lifecycle events patch the cached list; only its own 5 s poll refetches) |`,
    `| sessions.search over ${MESSAGES.toLocaleString()} messages (JSON-RPC, limit 20) | p95 ≤ 200 ms | p50 ${fmt(r.searchP50!)}, p95 ${fmt(r.searchP95!)}, max ${fmt(r.searchMax!)} (${SAMPLES.search} queries: rare, middling, common words, two-word) |`,
    '',
    'Interactive is timed in the page: navigation start → the animation frame after the composer is on screen, the live stream connected (status bar) and the session list on screen, each seen by a MutationObserver as it happens (`bench/lib/room-ready.ts`). Until 2026-11 it was timed from the bench side with Playwright\'s waits, which poll at up to 500 ms intervals; that figure is still given beside it. A switch is timed in the page from the click to the frame after the new pane shows its rows.',
    '',
  ].join('\n');
  console.log('\n' + markedBlock('room-bench', body));
  if (!quick && !reuse) {
    const file = path.join(repoRoot, 'BENCHMARKS.md');
    writeMarked(file, 'room-bench', body);
    console.log(`wrote the room section of ${file}`);
  }
}

main().catch(async (e) => {
  console.error(e);
  await server?.stop().catch(() => {});
  process.exit(1);
});
