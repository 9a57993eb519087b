// `npm run bench:scale`: the room and the store at 100,000 sessions and 10,000,000 messages (issue 24 items 1–2,
// issue 22 item 7), on SQLite and PostgreSQL. Seeds each store once (bench/lib/scale-store.ts; reruns reuse it),
// starts the built app with an event-loop probe (bench/lib/loop-probe.mjs), and measures: the gateway's reads over the
// big store (status, sessions.usage, sessions.list, search, runs.board, deliveries.list), then with 50 runs streaming
// the room in real Chromium (interactive, session switch, keystrokes, the agent board opening), search, and the
// event loop's longest gap in each phase. Its own checks: the right session opens, search finds the planted words,
// the sidebar's counts match the store. Figures, never assertions; writes BENCHMARKS.md "Scale: 100,000 sessions".
//   npm run bench:scale -- [--store=sqlite|postgres|both] [--sessions=N] [--reseed] [--cpu-prof] [--only=board] [--pin]
// --pin: the server on CPU 0, this process with its Chromium and its load client on CPU 1 (taskset), as when the
// browser and the clients are other machines; results in results-<store>-<N>-pinned.json, BENCHMARKS.md untouched.
// --only=board: runs.board, deliveries.list and the board's opening only (issue 22 item 7), figures in the results JSON.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from '@playwright/test';
import { launchChromium, loggedInContext } from './lib/browser';
import { RpcClient } from './lib/http';
import { machineInfo } from './lib/report';
import { streamLoad } from './lib/room-load';
import { keystrokes } from './lib/room-keys';
import { ROOM_READY_SCRIPT, type RoomReadyMarks, sessionSwitchScript, type SwitchTimes } from './lib/room-ready';
import { markWord, PER_SESSION, sessionOf, word } from './lib/scale-seed';
import { DELIVERIES_PER_KIND, ensureDeliveries, ensureSeeded, type ScaleTarget, scaleTarget, type StoreName, storeQuery } from './lib/scale-store';
import { scaleSection, type ScaleResult, type WindowSpread } from './lib/scale-report';
import { loopWindows } from './lib/loop-windows';
import { GAP_MS, gapCauses, monoUs, type Span } from './lib/gap-causes';
import { writeMarked } from './lib/sections';
import { afterWarm, repoRoot, type ServerHandle, startServer } from './lib/server';
import { percentile, sleep } from './lib/stats';

const argv = process.argv.slice(2);
const opt = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const SESSIONS = Number(opt('sessions') ?? 100_000);
const STORES: StoreName[] = opt('store') === 'sqlite' ? ['sqlite'] : opt('store') === 'postgres' ? ['postgres'] : ['sqlite', 'postgres'];
const CPU_PROF = argv.includes('--cpu-prof');
const ONLY_BOARD = opt('only') === 'board';
const PIN = argv.includes('--pin');
const STREAMING = 50;
const TOKEN = 'bench-scale-token';
const RPC_SAMPLES = 40;
const SAMPLES = { load: 5, switch: 30, keys: 200, search: 100, board: 5 };

let server: ServerHandle | undefined;
const watchdog = setTimeout(() => {
  console.error('bench:scale watchdog: giving up');
  void server?.stop().finally(() => process.exit(1));
}, 60 * 60_000);

const p = (xs: number[], q: number) => percentile(xs.filter(Number.isFinite), q);

// ── the event-loop probe's windows ─────────────────────────────────────────
/**
 * The longest loop gap and the longest garbage-collection pause over [from, to], from one read of the probe's windows;
 * and how the windows spread (a phase's longest gap is one window of hundreds, and moves from run to run): how many,
 * how many over 20 ms (of them with a GC pause over 10 ms), the 99th percentile of their longest gaps.
 */
function loopOver(probe: string, pid: number, from: number, to: number): { gap: number; gc: number; spread: WindowSpread } {
  const ws = loopWindows(probe, { from, to: to + 150, exceptPid: pid });
  const over = ws.filter((w) => w.max > 20);
  const spread = { windows: ws.length, over20: over.length, over20gc: over.filter((w) => (w.gc ?? 0) > 10).length, p99: p(ws.map((w) => w.max), 99) };
  return { gap: ws.length ? Math.max(...ws.map((w) => w.max)) : NaN, gc: Math.max(0, ...ws.map((w) => w.gc ?? 0)), spread };
}

// ── browser measurements (as bench/room.ts) ───────────────────────────────────
async function interactive(page: Page, url: string): Promise<number> {
  await page.addInitScript(ROOM_READY_SCRIPT);
  await page.goto(url);
  await page.waitForFunction('window.__roomReady?.all !== undefined', undefined, { timeout: 60_000 });
  return ((await page.evaluate('window.__roomReady')) as RoomReadyMarks).all;
}

/** Click "Board" → the frame after the board shows its groups with items, timed in the page. */
async function boardOpen(page: Page): Promise<number> {
  return (await page.evaluate(`new Promise((resolve) => {
    const btn = document.querySelector('[data-testid="open-board"]');
    if (!btn) return resolve(NaN);
    const t0 = performance.now();
    btn.click();
    const tick = () => {
      const done = document.querySelector('[data-testid="agent-board"] [data-testid="board-done"]');
      if (done && Number(done.getAttribute('data-count')) > 0) requestAnimationFrame(() => resolve(performance.now() - t0));
      else if (performance.now() - t0 > 20000) resolve(NaN);
      else requestAnimationFrame(tick);
    };
    tick();
  })`)) as number;
}

async function timeRpc(rpc: RpcClient, n: number, call: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await call(i);
    out.push(performance.now() - t0);
  }
  return out;
}

const searchQuery = (i: number) => {
  const kind = i % 4;
  return kind === 0 ? word(5000 + ((i * 37) % 5000)) : kind === 1 ? word(200 + ((i * 13) % 800)) : kind === 2 ? word(i % 50) : `${word(100 + i)} ${word(3000 + i * 7)}`;
};

async function measure(t: ScaleTarget): Promise<ScaleResult> {
  const seeded = await ensureSeeded(t);
  const probe = path.join(t.dir, 'loop-probe');
  for (const f of fs.readdirSync(t.dir)) if (f.startsWith('loop-probe.') || f.startsWith('loop-probe-gaps.')) fs.rmSync(path.join(t.dir, f));
  const profDir = path.join(t.dir, 'prof');
  const t0 = performance.now();
  server = await startServer({
    dataDir: t.dataDir,
    token: TOKEN,
    // The repo root (Next's working directory as `npm start` runs it).
    cwd: repoRoot,
    readyTimeoutMs: 300_000,
    nodeArgs: [`--import=${path.join(repoRoot, 'bench', 'lib', 'loop-probe.mjs')}`, ...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [])],
    // With a profile, the probe also traces each gap of GAP_MS or more, for the profile's samples to name (gapCauses).
    env: { CROSSTALK_LOOP_PROBE: probe, ...(CPU_PROF ? { CROSSTALK_GAP_TRACE: String(GAP_MS) } : {}), ...(t.databaseUrl ? { DATABASE_URL: t.databaseUrl } : {}) },
    ...(PIN ? { cpus: '0' } : {}),
  });
  // This process's threads now, and the Chromium and load client it starts later, off the server's CPU.
  if (PIN) execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
  const startS = (performance.now() - t0) / 1000;
  await afterWarm(server); // the phases measure steady state: the room's one-time warm-up is over
  const pid = server.pid;
  const rpc = new RpcClient({ baseUrl: server.baseUrl, token: TOKEN, timeoutMs: 60_000 });
  const r: ScaleResult = { store: t.store, sessions: t.sessions, messages: t.sessions * PER_SESSION, seededS: seeded.seededS, startS, rpc: {}, loop: {}, loopGc: {}, loopSpread: {}, room: {}, checks: {}, machine: machineInfo() };
  const spans: Span[] = [];
  const phase = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const from = Date.now();
    const fromUs = monoUs();
    const v = await fn();
    await sleep(250);
    spans.push({ name, fromUs, toUs: monoUs() });
    ({ gap: r.loop[name], gc: r.loopGc![name], spread: r.loopSpread![name]! } = loopOver(probe, pid, from, Date.now()));
    return v;
  };
  try {
    // 1. The gateway's reads over the big store, nothing else running.
    await sleep(1000);
    r.loop.idle = await phase('idle', () => sleep(3000)).then(() => r.loop.idle!);
    const someKey = (i: number) => sessionOf((i * 7919) % t.sessions, t.sessions).key;
    const rootKey = (i: number) => sessionOf(t.sessions - 10 * (1 + (i % 50)), t.sessions).key;
    if (!ONLY_BOARD) {
      r.rpc.status = await phase('status', () => timeRpc(rpc, RPC_SAMPLES, () => rpc.call('status', {})));
      r.rpc.usage = await phase('sessions.usage', () => timeRpc(rpc, RPC_SAMPLES, (i) => rpc.call('sessions.usage', { sessionKey: i % 2 ? someKey(i) : rootKey(i) })));
      r.rpc.list = await phase('sessions.list', () => timeRpc(rpc, RPC_SAMPLES, () => rpc.call('sessions.list', { limit: 100 })));
      let cursor: string | null = null;
      r.rpc.listDeep = await phase('sessions.list (paging)', () =>
        timeRpc(rpc, RPC_SAMPLES, async () => {
          const page: { next_cursor: string | null } = await rpc.call('sessions.list', { limit: 100, ...(cursor ? { cursor } : {}) });
          cursor = page.next_cursor;
        }),
      );
      r.rpc.search = await phase('sessions.search', () => timeRpc(rpc, SAMPLES.search, (i) => rpc.call('sessions.search', { query: searchQuery(i), limit: 20 })));
    }
    r.rpc.board = await phase('runs.board', () => timeRpc(rpc, RPC_SAMPLES, () => rpc.call('runs.board', {})));
    const hasDeliveries = await ensureDeliveries(t, (s) => sessionOf(s, t.sessions).key);
    if (hasDeliveries) {
      const kinds = await Promise.all(['session_message', 'delegate', 'callback', 'channel', 'webhook', 'push'].map((kind) => rpc.call<{ deliveries: unknown[] }>('deliveries.list', { kind, limit: 200 })));
      r.checks.deliveriesSeeded = `${DELIVERIES_PER_KIND.toLocaleString()} deliveries of each of 6 kinds seeded; deliveries.list answers ${kinds.map((k) => k.deliveries.length).join('/')} per kind (limit 200)`;
    }
    const treeKey = (i: number) => sessionOf(t.sessions - 1 - ((i * 7) % Math.min(t.sessions, 10_000)), t.sessions).key;
    try {
      await rpc.call('deliveries.list', {});
      // All, by either end, by state, by kind, in turn.
      const variants = [{}, { sessionKey: treeKey(0) }, { state: 'dead' }, { kind: 'webhook' }];
      r.rpc.deliveries = await phase('deliveries.list', () => timeRpc(rpc, RPC_SAMPLES, (i) => rpc.call('deliveries.list', i % 4 === 1 ? { sessionKey: treeKey(i) } : variants[i % 4]!)));
    } catch (e) {
      r.checks.deliveries = `deliveries.list not available here: ${(e as Error).message.slice(0, 80)}`;
    }
    // Checks: search finds the planted words, in the right session.
    let found = 0;
    if (!ONLY_BOARD) {
      const marks = Array.from({ length: 20 }, (_, i) => (i * 4999 + 17) % t.sessions);
      for (const s of marks) {
        // The word twice: the last word of a query is a prefix (scalemark17 would also find scalemark170…), the first is whole.
        const res: { results: Array<{ sessionKey: string; snippet: string }> } = await rpc.call('sessions.search', { query: `${markWord(s)} ${markWord(s)}`, limit: 5 });
        if (res.results.length === 1 && res.results[0]!.sessionKey === sessionOf(s, t.sessions).key && res.results[0]!.snippet.includes(markWord(s))) found++;
      }
      r.checks.search = `${found} / ${marks.length} planted words found, each once, in its own session's message`;
    }
    // The board carries the delegate trees: a grandchild's failed run shows its parent chain of three.
    const board: { failed: Array<{ sessionKey: string; parentChain: string[] }> } = await rpc.call('runs.board', {});
    const deep = board.failed.filter((b) => b.parentChain.length === 3).length;
    r.checks.board = `${board.failed.length} failed items, ${deep} with a parent chain three deep`;

    // 2. With 50 runs streaming: the room in Chromium.
    const load = streamLoad(rpc, STREAMING, 'lorem ipsum dolor sit amet consectetur '.repeat(10));
    await sleep(3000);
    const loadFrom = Date.now();
    const browser = await launchChromium();
    try {
      const context = await loggedInContext(browser, server.baseUrl, TOKEN, { timeoutMs: 60_000, bypassCSP: true });
      const url = `${server.baseUrl}/?session=agent:main:live-0`;
      const loads: number[] = [];
      const boards: number[] = [];
      await phase('room loads (50 streaming)', async () => {
        for (let i = 0; i < (ONLY_BOARD ? 0 : SAMPLES.load); i++) {
          const page = await context.newPage();
          loads.push(await interactive(page, url));
          await page.close();
        }
      });
      await phase('board opens (50 streaming)', async () => {
        for (let i = 0; i < SAMPLES.board; i++) {
          const page = await context.newPage();
          await interactive(page, url);
          await sleep(500);
          boards.push(await boardOpen(page));
          await page.close();
        }
      });
      if (ONLY_BOARD) {
        r.room = { loads, boards };
        r.runs = await load.stop();
        await context.close();
        return r;
      }
      const page = await context.newPage();
      await interactive(page, url);
      await phase('room open, watching (50 streaming)', () => sleep(10_000));
      const keys = await page.$$eval('[data-testid="session-item"]', (els) => els.map((e) => e.getAttribute('data-session-key')!).filter((k) => k.includes(':bench-')));
      const switches: number[] = [];
      let right = 0;
      await phase('session switches (50 streaming)', async () => {
        for (let i = 0; i < SAMPLES.switch && keys.length > 1; i++) {
          const key = keys[i % Math.min(keys.length, 20)]!;
          switches.push(((await page.evaluate(sessionSwitchScript(key))) as SwitchTimes).rows);
          // The right session opened: the pane is that session's and shows its newest seeded message.
          const last = await storeQuery<{ content: string }>(t, `select content from messages where session_key = ? and kind = 'message' order by id desc limit 1`, [key]);
          const pane = page.locator(`[data-testid="session-pane"][data-session-key="${key}"]`);
          const text = (await pane.count()) ? await pane.innerText() : '';
          if (last[0] && text.includes(last[0].content.split(' ').slice(0, 6).join(' '))) right++;
        }
      });
      r.checks.switch = `${right} / ${switches.length} switches showed the clicked session's newest message`;
      await page.evaluate(sessionSwitchScript(keys[0]!));
      const keyTimes = await phase('keystrokes (50 streaming)', () => keystrokes(page, SAMPLES.keys));
      const searchLoaded = await phase('sessions.search (50 streaming)', () => timeRpc(rpc, SAMPLES.search, (i) => rpc.call('sessions.search', { query: searchQuery(i + 1), limit: 20 })));
      ({ gap: r.loop['all of the streaming phase'], gc: r.loopGc!['all of the streaming phase'], spread: r.loopSpread!['all of the streaming phase']! } = loopOver(probe, pid, loadFrom, Date.now()));
      r.room = { loads, switches, keys: keyTimes, boards, searchLoaded };
      r.runs = await load.stop();
      // The sidebar's counts against the store, once the streams are still (a fresh page).
      const check = await context.newPage();
      await interactive(check, url);
      await sleep(1000);
      const items = await check.$$eval('[data-testid="session-item"]', (els) => els.map((e) => ({ key: e.getAttribute('data-session-key')!, text: (e as HTMLElement).innerText })));
      const counts = new Map(
        (await storeQuery<{ k: string; n: number }>(t, `select session_key as k, count(*) as n from messages where session_key in (${items.map(() => '?').join(',')}) group by session_key`, items.map((i) => i.key))).map((x) => [x.k, Number(x.n)]),
      );
      const match = items.filter((i) => new RegExp(`\\b${counts.get(i.key) ?? 0} msgs\\b`).test(i.text)).length;
      r.checks.sidebar = `${match} / ${items.length} sidebar sessions show the store's message count`;
      await context.close();
    } finally {
      await browser.close();
    }
  } finally {
    rpc.close();
    await server.stop();
    server = undefined;
    if (CPU_PROF) {
      r.profile = fs.readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile')).map((f) => path.join(profDir, f)).join(', ');
      gapCauses(probe, profDir, spans);
    }
  }
  return r;
}

async function main() {
  for (const store of STORES) {
    const t = scaleTarget(store, SESSIONS);
    console.log(`bench:scale ${store}: ${SESSIONS.toLocaleString()} sessions in ${t.dir}${t.databaseUrl ? ` (${t.databaseUrl})` : ''}`);
    const r = await measure(t);
    fs.writeFileSync(path.join(path.dirname(t.dir), `results-${store}-${SESSIONS}${PIN ? '-pinned' : ''}.json`), JSON.stringify(r, null, 2));
    if (ONLY_BOARD) {
      const f = (xs?: number[]) => (xs?.length ? `p50 ${p(xs, 50).toFixed(1)} / p95 ${p(xs, 95).toFixed(1)} ms, median ${p(xs, 50).toFixed(0)} max ${Math.max(...xs).toFixed(0)} (${xs.length})` : 'n/a');
      console.log(`${store}: runs.board ${f(r.rpc.board)}; deliveries.list ${f(r.rpc.deliveries)}; board opening ${f(r.room.boards)}; load at start ${r.machine.loadAvg}, at end ${os.loadavg().map((l) => l.toFixed(2)).join(' / ')}; checks ${JSON.stringify(r.checks)}`);
      continue;
    }
    console.log(JSON.stringify({ ...r, room: Object.fromEntries(Object.entries(r.room).map(([k, v]) => [k, { p50: p(v, 50), p95: p(v, 95) }])), rpc: Object.fromEntries(Object.entries(r.rpc).map(([k, v]) => [k, { p50: p(v, 50), p95: p(v, 95) }])) }, null, 1));
  }
  if (ONLY_BOARD || PIN) return void clearTimeout(watchdog);
  const results = (['sqlite', 'postgres'] as const)
    .map((s) => path.join(path.dirname(scaleTarget(s, SESSIONS).dir), `results-${s}-${SESSIONS}.json`))
    .filter((f) => fs.existsSync(f))
    .map((f) => JSON.parse(fs.readFileSync(f, 'utf8')) as ScaleResult);
  const body = scaleSection(results);
  console.log(body);
  if (SESSIONS === 100_000) writeMarked(path.join(repoRoot, 'BENCHMARKS.md'), 'scale-bench', body);
  clearTimeout(watchdog);
}

main().catch(async (e) => {
  console.error(e);
  await server?.stop().catch(() => {});
  process.exit(1);
});
