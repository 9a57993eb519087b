// `npm start` renders the room's pages in a worker thread (scripts/pages.mjs): the gateway answers with no page code
// loaded, the first visit starts the worker, a room left open keeps working on the gateway alone once the worker has
// stopped for want of page requests, and the next visit starts it again.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { expect, test, TOKEN } from './fixtures';
import { RoomPage } from './pages/room-page';

test('the first page starts the pages worker; an open room works without it; the next page starts it again', async ({ page, request, ownServer }) => {
  test.setTimeout(90_000);
  const server = await ownServer({ env: { CROSSTALK_PAGES_IDLE_MS: '2000' }, waitFor: 'gateway' });
  const call = async () => (await request.post(`${server.origin}/api/gateway`, { headers: { authorization: `Bearer ${TOKEN}` }, data: { jsonrpc: '2.0', id: 1, method: 'agents.list', params: {} } })).json();
  expect((await call()).result.agents.length).toBeGreaterThan(0);
  // The room's API is warmed after the start, over loopback with the server's token; no page has been asked for.
  await expect.poll(() => server.output(), { timeout: 30_000 }).toMatch(/crosstalk: room's API warmed \(HTTP 200, \d+ ms\)/);
  expect(server.output()).not.toContain('pages ready');

  // Login is the gateway's route: still no page code.
  expect((await request.get(`${server.origin}/login?token=${TOKEN}`, { maxRedirects: 0 })).status()).toBe(303);
  expect(server.output()).not.toContain('pages ready');
  const room = new RoomPage(page);
  await page.goto(`${server.origin}/login?token=${TOKEN}`); // and its redirect to the room: the first page
  await room.waitLive();
  expect(server.output()).toMatch(/crosstalk: pages ready \(Next\.js loaded in a worker thread in \d+ ms\)/);
  // Its threads (the pages' worker among them, and V8's and libuv's) run below the event loop in the scheduler
  // (scripts/thread-priority.mjs): nice 10, the main thread as started (this process's).
  const pid = server.pid()!;
  const priority = (t: string) => {
    try {
      return os.getPriority(Number(t));
    } catch {
      return null; // a thread that ended
    }
  };
  const nices = () => Object.fromEntries(fs.readdirSync(`/proc/${pid}/task`).map((t) => [t, priority(t)]).filter(([, n]) => n !== null));
  const helper = Math.max(10, os.getPriority());
  await expect.poll(() => Object.entries(nices()).filter(([t, n]) => Number(t) !== pid && n !== helper), { timeout: 10_000 }).toEqual([]);
  expect(nices()[pid]).toBe(os.getPriority());
  expect(Object.keys(nices()).length).toBeGreaterThan(5);

  // The worker's own loopback port answers nothing but its server: not a page, not an API route. Before, a GET of
  // /api/health there booted a second runtime in the worker (on SQLite it found the data dir locked and the worker died).
  const workerPorts = listeningPorts(pid).filter((p) => String(p) !== new URL(server.origin).port);
  expect(workerPorts.length).toBeGreaterThan(0);
  for (const p of workerPorts) {
    for (const path of ['/api/health', '/api/metrics', '/']) {
      const res = await request.get(`http://127.0.0.1:${p}${path}`, { headers: { authorization: `Bearer ${TOKEN}`, 'x-crosstalk-pages': 'guess' }, maxRedirects: 0 });
      expect(res.status(), `${p}${path}`).toBe(403);
    }
  }
  // Nor does a path whose dot segments lead to an API route through the public port (Next would resolve them there).
  // (Sent as written: a URL parser, Playwright's too, would resolve the dot segments before sending.)
  const publicPort = Number(new URL(server.origin).port);
  for (const path of ['/./api/health', '/x/../api/health', '/%2e/api/health']) {
    // Before: 502 "the room's pages did not answer", the worker dead (SQLite) or a second runtime in it (PostgreSQL).
    expect(await rawStatus(publicPort, path), path).not.toBe(502);
    for (const p of workerPorts) expect(await rawStatus(p, path), `${p}${path}`).toBe(403);
  }
  expect(server.output()).not.toContain('another crosstalk process');
  await page.reload();
  await room.waitLive();

  // No page asked for in 2 s: the worker stops. The open room talks to the gateway only: a turn still streams in.
  await expect.poll(() => server.output(), { timeout: 30_000 }).toContain("crosstalk: pages' worker stopped");
  await room.send('still here');
  await expect(room.texts('assistant').last()).toHaveText('echo: still here');

  // A reload is a page again: a new worker renders it, with the turn in the transcript.
  await page.reload();
  await room.waitLive();
  await expect(room.texts('assistant').last()).toHaveText('echo: still here');
  expect(server.output().split("pages' worker stopped").at(-1)).toMatch(/pages ready \(Next\.js loaded in a worker thread/);
});

/** The TCP ports a process listens on (IPv4), from /proc: its sockets' inodes matched in /proc/net/tcp (state 0A). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  return fs
    .readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[3] === '0A' && inodes.has(f[9]!))
    .map((f) => parseInt(f[1]!.split(':')[1]!, 16));
}

/** The status of a GET of `path` exactly as written (no URL parsing on the way). */
function rawStatus(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'GET' }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}
