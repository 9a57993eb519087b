// `npx tsx bench/profile-live-start.ts DIR [--no-load]` (DATABASE_URL= for PostgreSQL, LOADS=): when the room's live
// stream starts against React's commits during a load, with 50 runs streaming — a React DevTools hook notes every
// commit and its passive effects, the page's EventSource its creation and open, and the long tasks, in page time.
import path from 'node:path';
import { launchChromium, loggedInContext } from './lib/browser';
import { RpcClient } from './lib/http';
import { streamLoad } from './lib/room-load';
import { ROOM_READY_SCRIPT } from './lib/room-ready';
import { repoRoot, startServer } from './lib/server';
import { sleep } from './lib/stats';
const dir = process.argv[2]!;
const server = await startServer({ dataDir: path.join(dir, 'data'), token: 'tk', cwd: repoRoot, readyTimeoutMs: 300_000, env: process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {} });
const rpc = new RpcClient({ baseUrl: server.baseUrl, token: 'tk', timeoutMs: 60_000 });
const load = process.argv.includes('--no-load') ? undefined : streamLoad(rpc, 50, 'lorem ipsum dolor sit amet '.repeat(12));
await sleep(3000);
const browser = await launchChromium();
try {
  const ctx = await loggedInContext(browser, server.baseUrl, 'tk', { bypassCSP: true });
  for (let i = 0; i < Number(process.env.LOADS ?? 4); i++) {
    const page = await ctx.newPage();
    await page.addInitScript(`window.__ev = []; const mark = (k) => window.__ev.push(k + '@' + Math.round(performance.now()));
      let n = 0;
      window.__REACT_DEVTOOLS_GLOBAL_HOOK__ = { renderers: new Map(), supportsFiber: true, inject(r) { const id = this.renderers.size + 1; this.renderers.set(id, r); return id; },
        onScheduleFiberRoot() {}, onCommitFiberRoot(id, root) { mark('commit' + (++n) + (root.current?.memoizedState?.isDehydrated ? '(dehydrated)' : '')); }, onPostCommitFiberRoot() { mark('post' + n); }, onCommitFiberUnmount() {}, checkDCE() {} };
      const ES = window.EventSource; window.EventSource = class extends ES { constructor(u, o) { super(u, o); mark('ES-new'); this.addEventListener('open', () => mark('ES-open')); } };
      new PerformanceObserver((l) => { for (const e of l.getEntries()) mark('LT' + Math.round(e.duration)); }).observe({ type: 'longtask', buffered: true });
      document.addEventListener('DOMContentLoaded', () => mark('DCL'));`);
    await page.addInitScript(ROOM_READY_SCRIPT);
    await page.goto(`${server.baseUrl}/?session=agent:main:live-0`);
    await page.waitForFunction('window.__roomReady?.all !== undefined', undefined, { timeout: 60_000 });
    await sleep(500);
    const r = (await page.evaluate('({ ev: window.__ev, ready: window.__roomReady })')) as { ev: string[]; ready: Record<string, number> };
    console.log(`load ${i}: ready ${JSON.stringify(Object.fromEntries(Object.entries(r.ready).map(([k, v]) => [k, Math.round(v)])))}\n   ${r.ev.join(' ')}`);
    await page.close();
  }
} finally {
  await load?.stop();
  await browser.close();
  rpc.close();
  await server.stop();
}
