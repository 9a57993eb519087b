// scripts/pages.mjs: pages forwarded to a worker thread started by the first request, stopped when idle, started again.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PAGES_KEY_HEADER, type PagesWorker, pagesWorker } from '../../scripts/pages.mjs';

// A stand-in for scripts/pages-worker.mjs with the same handshake and the same query messages: listens on loopback,
// posts its port. It answers with what it was handed and what it received, asks the gateway's thread a query on
// /query/<path>, streams /stream in pieces, and exits on /exit.
const WORKER = `
import http from 'node:http';
import { parentPort, workerData, threadId } from 'node:worker_threads';
const waiting = new Map();
parentPort.on('message', (m) => { if (m.type === 'answer') waiting.get(m.id)(m), waiting.delete(m.id); });
let id = 0;
const server = http.createServer((req, res) => {
  if (req.url === '/exit') process.exit(3);
  if (req.url.startsWith('/query/')) {
    const q = ++id;
    waiting.set(q, (m) => res.end(JSON.stringify(m)));
    parentPort.postMessage({ type: 'query', id: q, path: req.url.slice(7), input: { limit: 2 } });
    return;
  }
  if (req.url === '/stream') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('one,');
    setTimeout(() => res.end('two'), 200);
    return;
  }
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    res.setHeader('set-cookie', ['a=1', 'b=2']);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ threadId, url: req.url, method: req.method, body, headers: req.headers, workerData }));
  });
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ type: 'ready', port: server.address().port, ms: 1 }));
`;

describe('the pages worker (scripts/pages.mjs)', () => {
  let dir: string;
  let server: http.Server;
  let base: string;
  let pages: PagesWorker | undefined;
  const logs: string[] = [];
  const log = { log: (m: string) => logs.push(m), error: (m: string) => logs.push(m) };
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-pages-'));
    fs.writeFileSync(path.join(dir, 'worker.mjs'), WORKER);
    server = http.createServer((req, res) => pages!.handle(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterEach(async () => {
    await pages?.close();
    logs.length = 0;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  });
  // The gateway's side of a query: answers sessions.list with its input, refuses anything else.
  const query = async (p: string, input: unknown) => {
    if (p !== 'sessions.list') throw Object.assign(new Error(`no query ${p}`), { code: 'NOT_FOUND' });
    return JSON.stringify({ sessions: [], input });
  };
  const make = (idleMs: number) =>
    pagesWorker({ root: dir, host: '127.0.0.1', port: 3000, token: 'tok', defaultAgentId: 'main', query, idleMs, workerFile: path.join(dir, 'worker.mjs'), log });
  const get = async (p: string, init?: RequestInit) => {
    const res = await fetch(base + p, init);
    return { status: res.status, headers: res.headers, text: await res.text() };
  };

  it('starts the worker with the first request, hands it the gateway facts and forwards the request whole', async () => {
    pages = make(60_000);
    expect(pages!.running).toBe(false);
    const r = await get('/some/page?x=1', { method: 'POST', body: 'hello', headers: { cookie: 'crosstalk_token=t', 'x-custom': 'yes', connection: 'keep-alive' } });
    expect(r.status).toBe(200);
    const seen = JSON.parse(r.text);
    expect(seen).toMatchObject({ url: '/some/page?x=1', method: 'POST', body: 'hello', workerData: { token: 'tok', defaultAgentId: 'main', port: 3000 } });
    expect(seen.headers).toMatchObject({ cookie: 'crosstalk_token=t', 'x-custom': 'yes' });
    // Each request carries the key the worker was started with (its only way to tell its own server from another
    // local process on its port); a key a client sent is replaced, not passed on.
    expect(seen.workerData.key).toMatch(/^[\w-]{32}$/);
    expect(seen.headers[PAGES_KEY_HEADER]).toBe(seen.workerData.key);
    const forged = JSON.parse((await get('/forged', { headers: { [PAGES_KEY_HEADER]: 'guess' } })).text);
    expect(forged.headers[PAGES_KEY_HEADER]).toBe(seen.workerData.key);
    // Both cookies come back (an array of set-cookie headers is not folded into one).
    expect(r.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(pages!.running).toBe(true);
    expect(logs.filter((l) => l.includes('pages ready'))).toHaveLength(1);
    // The same worker answers the next request.
    expect(JSON.parse((await get('/again')).text).threadId).toBe(seen.threadId);
  });

  it("answers the worker's queries by message, as JSON text, and its refusals as errors", async () => {
    pages = make(60_000);
    const ok = JSON.parse((await get('/query/sessions.list')).text);
    expect(JSON.parse(ok.json)).toEqual({ sessions: [], input: { limit: 2 } });
    const refused = JSON.parse((await get('/query/sessions.patch')).text);
    expect(refused.json).toBeUndefined();
    expect(refused.error).toEqual({ message: 'no query sessions.patch', code: 'NOT_FOUND' });
  });

  it('streams an answer as the worker writes it', async () => {
    pages = make(60_000);
    const res = await fetch(`${base}/stream`);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('one,');
    let rest = '';
    for (let c = await reader.read(); !c.done; c = await reader.read()) rest += new TextDecoder().decode(c.value);
    expect(rest).toBe('two');
  });

  it('stops the worker when no page was asked for in idleMs, and starts a new one for the next', async () => {
    pages = make(300);
    const first = JSON.parse((await get('/a')).text).threadId;
    expect(pages!.running).toBe(true);
    await expect.poll(() => pages!.running, { timeout: 5_000 }).toBe(false);
    expect(logs.some((l) => l.includes("pages' worker stopped"))).toBe(true);
    const second = JSON.parse((await get('/b')).text).threadId;
    expect(second).not.toBe(first);
  });

  it('does not stop a worker while a request is open', async () => {
    pages = make(50);
    const res = await fetch(`${base}/stream`); // answered over 200 ms, four idle periods
    await res.text();
    expect(logs.some((l) => l.includes("pages' worker stopped"))).toBe(false);
  });

  it('answers 502 when the worker dies, and the next request starts a new one', async () => {
    pages = make(60_000);
    const before = JSON.parse((await get('/a')).text).threadId;
    expect((await get('/exit')).status).toBe(502);
    await expect.poll(() => pages!.running, { timeout: 5_000 }).toBe(false);
    const after = await get('/b');
    expect(after.status).toBe(200);
    expect(JSON.parse(after.text).threadId).not.toBe(before);
  });
});
