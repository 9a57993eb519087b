// `npx tsx bench/profile-room.ts DIR [--cpu-prof] [--no-load]`: where the room's first load and session switch spend
// their time, on a store kept by `npm run bench:room -- --keep` (DIR). Prints phases per load and per switch, the
// requests each makes, and (with --cpu-prof) the server's top functions by self time.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Page } from '@playwright/test';
import { launchChromium, loggedInContext } from './lib/browser';
import { RpcClient } from './lib/http';
import { repoRoot, startServer } from './lib/server';
import { streamLoad } from './lib/room-load';
import { ROOM_READY_SCRIPT, type RoomReadyMarks, sessionSwitchScript, type SwitchTimes } from './lib/room-ready';

const inPage: number[] = [];
import { percentile, sleep } from './lib/stats';

const argv = process.argv.slice(2);
const dir = path.resolve(argv.find((a) => !a.startsWith('--'))!);
const cpuProf = argv.includes('--cpu-prof');
const noLoad = argv.includes('--no-load');
const browserProf = argv.includes('--browser-prof');
const loadCount = Number(argv.find((a) => a.startsWith('--loads='))?.slice(8) ?? 6);

/** A profile's script URL, short: no origin, nothing up to node_modules/, and the app's own files relative to the checkout. */
const repoUrl = `${pathToFileURL(repoRoot).href}/`;
function shortUrl(url: string): string {
  const u = url.replace(/^https?:\/\/[^/]+/, '').replace(/^.*node_modules\//, '');
  return u.startsWith(repoUrl) ? u.slice(repoUrl.length) : u;
}

type CpuProfile = { nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number } }>; samples: number[]; timeDeltas: number[] };
function topFunctions(prof: CpuProfile, n = 30): string {
  const self = new Map<number, number>();
  prof.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)));
  const byFn = new Map<string, number>();
  const byUrl = new Map<string, number>();
  let total = 0;
  for (const nd of prof.nodes) {
    const t = self.get(nd.id) ?? 0;
    total += t;
    const url = shortUrl(nd.callFrame.url);
    const k = `${nd.callFrame.functionName || '(anon)'} ${url}:${nd.callFrame.lineNumber}:${nd.callFrame.columnNumber}`;
    byFn.set(k, (byFn.get(k) ?? 0) + t);
    byUrl.set(url || nd.callFrame.functionName, (byUrl.get(url || nd.callFrame.functionName) ?? 0) + t);
  }
  const fmt = (m: Map<string, number>, k: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, k).map(([x, t]) => `${((t / total) * 100).toFixed(1).padStart(5)}% ${(t / 1000).toFixed(0).padStart(6)} ms  ${x}`).join('\n');
  return `${(total / 1e6).toFixed(2)} s sampled\n-- by url\n${fmt(byUrl, 12)}\n-- by function\n${fmt(byFn, n)}`;
}
const TOKEN = 'bench-room-token';

async function load(page: Page, url: string) {
  const reqs: Array<{ url: string; t0: number; t1?: number }> = [];
  const t0 = performance.now();
  page.on('request', (r) => reqs.push({ url: r.url(), t0: performance.now() - t0 }));
  await page.addInitScript(`window.__lt = []; new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__lt.push([Math.round(e.startTime), Math.round(e.duration)]); }).observe({ type: 'longtask', buffered: true });
    window.__es = {};
    const ES = window.EventSource;
    window.EventSource = class extends ES { constructor(u, o) { super(u, o); const t = (k) => window.__es[k] ??= Math.round(performance.now()); t('new'); this.addEventListener('open', () => t('open')); this.addEventListener('connected', () => t('connected')); } };
    new MutationObserver(() => { const b = document.querySelector('[data-testid="status-bar"]'); if (b && b.getAttribute('data-connection') === 'connected') window.__es.bar ??= Math.round(performance.now()); if (document.querySelector('textarea[aria-label="Message"]')) window.__es.box ??= Math.round(performance.now()); }).observe(document, { subtree: true, childList: true, attributes: true });
    `);
  page.on('response', (r) => {
    if (r.url().includes('events.onEvent')) console.log(`   sse headers at ${(performance.now() - t0).toFixed(0)}`);
  });
  page.on('requestfinished', (r) => {
    const e = reqs.find((x) => x.url === r.url() && x.t1 === undefined);
    if (e) e.t1 = performance.now() - t0;
  });
  await page.addInitScript(ROOM_READY_SCRIPT);
  await page.goto(url, { waitUntil: 'commit' });
  const tCommit = performance.now() - t0;
  const mark = async (p: Promise<unknown>) => (await p, performance.now() - t0);
  const [box, conn, item] = await Promise.all([
    mark(page.getByRole('textbox', { name: 'Message', exact: true }).waitFor()),
    mark(page.locator('[data-testid="status-bar"][data-connection="connected"]').waitFor()),
    mark(page.locator('[data-testid="session-item"]').first().waitFor()),
  ]);
  const nav = (await page.evaluate(`JSON.stringify(performance.getEntriesByType('navigation')[0])`)) as string;
  const n = JSON.parse(nav);
  const paint = (await page.evaluate(`JSON.stringify(performance.getEntriesByType('paint'))`)) as string;
  console.log(
    `load: commit ${tCommit.toFixed(0)} | ttfb ${n.responseStart.toFixed(0)} html-end ${n.responseEnd.toFixed(0)} (${(n.transferSize / 1024).toFixed(0)} KiB) dcl ${n.domContentLoadedEventEnd.toFixed(0)} load ${n.loadEventEnd.toFixed(0)} | box ${box.toFixed(0)} conn ${conn.toFixed(0)} item ${item.toFixed(0)} | paint ${JSON.parse(paint).map((p: { name: string; startTime: number }) => `${p.name}=${p.startTime.toFixed(0)}`).join(' ')}`,
  );
  await page.waitForFunction('window.__roomReady?.all !== undefined');
  const ready = (await page.evaluate('window.__roomReady')) as RoomReadyMarks;
  console.log(`   in page: ${JSON.stringify(await page.evaluate('window.__es'))} ready ${JSON.stringify(Object.fromEntries(Object.entries(ready).map(([k, v]) => [k, Math.round(v)])))}`);
  inPage.push(ready.all);
  console.log(`   long tasks: ${JSON.stringify(await page.evaluate('window.__lt'))}`);
  for (const r of reqs) console.log(`   ${r.t0.toFixed(0).padStart(5)} → ${(r.t1 ?? NaN).toFixed(0).padStart(5)}  ${r.url.replace(/^https?:\/\/[^/]+/, '').slice(0, 140)}`);
  return Math.max(box, conn, item);
}

type SwitchPhases = SwitchTimes & { commit: number; loaf: unknown[]; hist: Array<Array<number | string>> };

/** A session switch timed in the page (bench/lib/room-ready.ts), with its first commit of rows, long animation frames, marks and chat.history requests. */
async function switchPhases(page: Page, key: string): Promise<SwitchPhases> {
  const before = `
    let commit = NaN;
    const mo = new MutationObserver(() => {
      const p = document.querySelector('[data-testid="session-pane"][data-session-key="' + k + '"]');
      if (Number(p?.querySelector('[data-testid="transcript"]')?.getAttribute('data-rows') ?? 0) > 0 && !Number.isFinite(commit)) { commit = performance.now() - t0; mo.disconnect(); }
    });
    mo.observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-rows', 'data-session-key'] });`;
  const after = `
    const res = performance.getEntriesByType('resource').filter((e) => e.name.includes('chat.history') && e.startTime >= t0 - 1);
    const loaf = (window.__loaf || []).filter((f) => f.startTime + f.duration >= t0).map((f) => ({ at: Math.round(f.startTime - t0), dur: Math.round(f.duration), render: Math.round(f.renderStart ? f.renderStart - f.startTime : -1), layout: Math.round(f.styleAndLayoutStart ? f.startTime + f.duration - f.styleAndLayoutStart : -1), scripts: f.scripts.map((x) => x.invoker + ' ' + Math.round(x.duration) + (x.forcedStyleAndLayoutDuration ? ' forced ' + Math.round(x.forcedStyleAndLayoutDuration) : '')).join('; ') }));
    window.__loaf = [];
    const marks = performance.getEntriesByType('mark').filter((m) => m.startTime >= t0).map((m) => m.name + '@' + Math.round(m.startTime - t0)).join(' ');
    performance.clearMarks();
    loaf.push(marks);
    return { commit, loaf, hist: res.map((e) => [e.startTime - t0, e.responseStart - t0, e.responseEnd - t0, e.transferSize, e.name.split('?')[0].split('/').pop()]) };`;
  return (await page.evaluate(sessionSwitchScript(key, { before, after }))) as SwitchPhases;
}

async function main() {
  const profDir = path.join(dir, 'prof');
  if (cpuProf) fs.mkdirSync(profDir, { recursive: true });
  const server = await startServer({ dataDir: path.join(dir, 'data'), token: TOKEN, cwd: repoRoot, readyTimeoutMs: 120_000, nodeArgs: cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [] });
  const rpc = new RpcClient({ baseUrl: server.baseUrl, token: TOKEN, timeoutMs: 60_000 });
  const streams = noLoad ? undefined : streamLoad(rpc, 50, 'lorem ipsum dolor sit amet '.repeat(12));
  await sleep(2000);
  const browser = await launchChromium();
  try {
    const context = await loggedInContext(browser, server.baseUrl, TOKEN);
    const loads: number[] = [];
    for (let i = 0; i < loadCount; i++) {
      const page = await context.newPage();
      const cdp = browserProf && i === 2 ? await context.newCDPSession(page) : null;
      if (cdp) {
        await cdp.send('Profiler.enable');
        await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
        await cdp.send('Profiler.start');
      }
      loads.push(await load(page, `${server.baseUrl}/?session=agent:main:live-0`));
      if (cdp) {
        const { profile } = (await cdp.send('Profiler.stop')) as { profile: CpuProfile };
        const file = path.join(dir, `browser-load.${Date.now()}.cpuprofile`);
        fs.writeFileSync(file, JSON.stringify(profile));
        console.log(`browser profile of this load (${file}): ${topFunctions(profile)}`);
      }
      await page.close();
    }
    console.log(`interactive median ${percentile(loads, 50).toFixed(0)} (polled), in page ${inPage.map(Math.round).join(' ')} → median ${percentile(inPage, 50).toFixed(0)}`);
    const page = await context.newPage();
    await load(page, `${server.baseUrl}/?session=agent:main:live-0`);
    await sleep(1000);
    const keys = await page.$$eval('[data-testid="session-item"]', (els) => els.map((e) => e.getAttribute('data-session-key')!).filter((k) => k.includes(':bench-')));
    const sw: number[] = [];
    await page.evaluate(`window.__loaf = []; new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__loaf.push(e.toJSON()); }).observe({ type: 'long-animation-frame', buffered: false });`);
    const cdp = browserProf ? await context.newCDPSession(page) : null;
    if (cdp) {
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
      await cdp.send('Profiler.start');
    }
    for (let i = 0; i < 20; i++) {
      const r = await switchPhases(page, keys[i % Math.min(keys.length, 20)]!);
      sw.push(r.rows);
      console.log(`switch: pane ${r.pane.toFixed(0)} commit ${r.commit.toFixed(0)} rows ${r.rows.toFixed(0)} history ${JSON.stringify(r.hist.map((h) => h.map((x) => (typeof x === 'number' ? Math.round(x) : x))))}`);
      for (const f of r.loaf) console.log(`     loaf ${JSON.stringify(f)}`);
    }
    if (cdp) {
      const { profile } = (await cdp.send('Profiler.stop')) as { profile: CpuProfile };
      const file = path.join(dir, `browser-switches.${Date.now()}.cpuprofile`);
      fs.writeFileSync(file, JSON.stringify(profile));
      console.log(`browser profile of the switches (${file}): ${topFunctions(profile, 40)}`);
    }
    console.log(`switch p50 ${percentile(sw, 50).toFixed(0)} p95 ${percentile(sw, 95).toFixed(0)}`);
  } finally {
    await streams?.stop();
    await browser.close();
    rpc.close();
    await server.stop();
  }
  if (cpuProf) {
    const file = fs.readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile')).map((f) => path.join(profDir, f)).sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0]!;
    const prof = JSON.parse(fs.readFileSync(file, 'utf8')) as { nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>; samples: number[]; timeDeltas: number[] };
    const self = new Map<number, number>();
    prof.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)));
    const byFn = new Map<string, number>();
    let total = 0;
    for (const n of prof.nodes) {
      const t = self.get(n.id) ?? 0;
      total += t;
      const k = `${n.callFrame.functionName || '(anon)'} ${shortUrl(n.callFrame.url)}:${n.callFrame.lineNumber}`;
      byFn.set(k, (byFn.get(k) ?? 0) + t);
    }
    console.log(`server profile ${file}: ${(total / 1e6).toFixed(1)} s sampled`);
    for (const [k, t] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(`${((t / total) * 100).toFixed(1).padStart(5)}% ${(t / 1000).toFixed(0).padStart(6)} ms  ${k}`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
