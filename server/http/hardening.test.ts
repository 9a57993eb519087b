// The browser boundary over real HTTP on both paths (node:http and Next's route handlers): cookie parsing, CSRF, limits.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_COOKIE } from '../auth';
import { startTestServer, TEST_TOKEN, type TestServer } from '../testing/harness';

let s: TestServer;
/** The runtime's node-level tRPC handler (what `npm start` routes /api/trpc/* to) on a server of its own. */
let trpcServer: http.Server;
let trpcOrigin: string;
/** Next's route handlers for the same runtime, called the way Next calls them (a Request in, a Response out). */
let next: {
  gatewayPost: (req: Request) => Promise<Response>;
  events: (req: Request) => Promise<Response>;
  trpc: (req: Request) => Promise<Response>;
};

beforeAll(async () => {
  s = await startTestServer();
  (globalThis as Record<symbol, unknown>)[Symbol.for('crosstalk.runtime')] = Promise.resolve(s.rt);
  const gw = await import('../../app/api/gateway/route');
  const ev = await import('../../app/api/gateway/events/route');
  const trpc = await import('../../app/api/trpc/[trpc]/route');
  next = { gatewayPost: gw.POST, events: ev.GET, trpc: trpc.POST };
  trpcServer = http.createServer((req, res) => s.rt.nodeApi(req, res));
  await new Promise<void>((r) => trpcServer.listen(0, '127.0.0.1', r));
  trpcOrigin = `http://127.0.0.1:${(trpcServer.address() as AddressInfo).port}`;
});
afterAll(async () => {
  trpcServer?.closeAllConnections();
  await new Promise<void>((r) => (trpcServer ? trpcServer.close(() => r()) : r()));
  delete (globalThis as Record<symbol, unknown>)[Symbol.for('crosstalk.runtime')];
  await s?.close();
});

const rpcBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'status', params: {} });
const cookie = (v = TEST_TOKEN) => `${AUTH_COOKIE}=${encodeURIComponent(v)}`;

/** POST /api/gateway over node:http (the path `npm start` and the worker use). */
async function nodePost(headers: Record<string, string>, body = rpcBody) {
  const res = await fetch(`${s.url}/api/gateway`, { method: 'POST', headers, body });
  return { status: res.status, body: await res.json().catch(() => null) };
}
/** The same request through Next's app/api/gateway route. */
async function nextPost(headers: Record<string, string>, body = rpcBody) {
  const res = await next.gatewayPost(new Request(`${s.url}/api/gateway`, { method: 'POST', headers: { host: new URL(s.url).host, ...headers }, body }));
  return { status: res.status, body: await res.json().catch(() => null) };
}

describe.each([
  ['node:http', nodePost],
  ['Next route', nextPost],
] as const)('the login cookie on %s', (_name, post) => {
  it('a malformed cookie is refused, never a crash or a hang', async () => {
    for (const bad of [`${AUTH_COOKIE}=%`, `${AUTH_COOKIE}=%E0%A4%A`, `${AUTH_COOKIE}=%zz; other=1`, `=;;==`, `${AUTH_COOKIE}`]) {
      const r = await post({ 'content-type': 'application/json', cookie: bad });
      expect(r.status).toBe(401);
      expect(r.body.error).toMatchObject({ code: -32001, data: { code: 'unauthorized' } });
    }
    // Still serving.
    expect((await post({ 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` })).status).toBe(200);
  });

  it('is accepted on a same-origin JSON request', async () => {
    const r = await post({ 'content-type': 'application/json', cookie: cookie(), origin: s.url, 'sec-fetch-site': 'same-origin' });
    expect(r.status).toBe(200);
    expect(r.body.result).toHaveProperty('activeRuns');
    // A non-browser client sends neither Origin nor Sec-Fetch-Site.
    expect((await post({ 'content-type': 'application/json; charset=utf-8', cookie: cookie() })).status).toBe(200);
  });

  it('is refused cross-origin (another port of the same host is another origin) and on non-JSON bodies', async () => {
    const otherPort = `http://127.0.0.1:${Number(new URL(s.url).port) + 1}`;
    const cases: Array<Record<string, string>> = [
      { 'content-type': 'text/plain', cookie: cookie() },
      { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie() },
      { cookie: cookie() },
      { 'content-type': 'application/json', cookie: cookie(), origin: otherPort },
      { 'content-type': 'application/json', cookie: cookie(), 'sec-fetch-site': 'same-site' },
      { 'content-type': 'application/json', cookie: cookie(), 'sec-fetch-site': 'cross-site' },
      { 'content-type': 'application/json', cookie: cookie(), origin: 'null' },
    ];
    for (const headers of cases) {
      const r = await post(headers);
      expect(r.status, JSON.stringify(headers)).toBe(401);
    }
    // The Bearer token is not a browser credential: it works from anywhere.
    expect((await post({ 'content-type': 'text/plain', authorization: `Bearer ${TEST_TOKEN}`, origin: otherPort })).status).toBe(200);
  });
});

describe('SSE with the cookie', () => {
  it('opens same-origin, is refused cross-origin, and a bad cookie is a 401 on both paths', async () => {
    const url = `${s.url}/api/gateway/events?sessionKey=agent:main:main`;
    const ok = await fetch(url, { headers: { cookie: cookie() } });
    expect(ok.status).toBe(200);
    await ok.body?.cancel();
    expect((await fetch(url, { headers: { cookie: cookie(), 'sec-fetch-site': 'cross-site' } })).status).toBe(401);
    expect((await fetch(url, { headers: { cookie: `${AUTH_COOKIE}=%` } })).status).toBe(401);
    const viaNext = await next.events(new Request(url, { headers: { cookie: `${AUTH_COOKIE}=%` } }));
    expect(viaNext.status).toBe(401);
  });
});

/** The same Request sent over HTTP to the node-level tRPC handler (Host and a same-origin Origin are that server's). */
async function nodeTrpc(req: Request): Promise<Response> {
  const url = new URL(req.url);
  const target = new URL(url.pathname + url.search, trpcOrigin);
  const headers = new Headers(req.headers);
  headers.delete('host'); // fetch sends the target's
  if (headers.get('origin') === s.url) headers.set('origin', trpcOrigin);
  return fetch(target, { method: req.method, headers, body: req.body, duplex: 'half' } as RequestInit);
}

describe.each([
  ['Next route', () => next.trpc],
  ['node:http', () => nodeTrpc],
] as const)('tRPC endpoint limits on %s', (_name, handler) => {
  const trpcUrl = (path: string, batch = false) => `${s.url}/api/trpc/${path}${batch ? '?batch=1' : ''}`;
  const trpc = (req: Request) => handler()(req);
  it('refuses a body over 1 MiB with payload_too_large', async () => {
    const big = JSON.stringify({ sessionKey: 'agent:main:main', message: 'x'.repeat(1024 * 1024 + 10) });
    const res = await trpc(new Request(trpcUrl('chat.send'), { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` }, body: big }));
    expect(res.status).toBe(413);
    expect((await res.json()).error.data.code).toBe('payload_too_large');
  });

  it('refuses a batch larger than 20 calls', async () => {
    const paths = Array.from({ length: 21 }, () => 'status.get').join(',');
    const input = JSON.stringify(Object.fromEntries(Array.from({ length: 21 }, (_, i) => [i, null])));
    const res = await trpc(new Request(`${s.url}/api/trpc/${paths}?batch=1`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` }, body: input }));
    expect(res.status).toBe(400);
    const ok = await trpc(new Request(`${s.url}/api/trpc/pairings.list?batch=1`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` }, body: '{"0":null}' }));
    expect(ok.status).not.toBe(400);
  });

  it('refuses a string holding NUL as invalid_request (PostgreSQL text cannot store it)', async () => {
    const res = await trpc(
      new Request(`${s.url}/api/trpc/sessions.patch?batch=1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` },
        body: JSON.stringify({ 0: { sessionKey: 'agent:main:main', label: 'a\u0000b' } }),
      }),
    );
    expect((await res.json())[0].error.data.code).toBe('invalid_request');
  });

  it('refuses a cookie mutation from another origin, and one with a text/plain body', async () => {
    const body = JSON.stringify({ 0: { channel: 'webhook', code: 'ABCDEFGH', decision: 'approve' } });
    const call = (headers: Record<string, string>) =>
      trpc(new Request(`${s.url}/api/trpc/pairings.resolve?batch=1`, { method: 'POST', headers: { cookie: cookie(), host: new URL(s.url).host, ...headers }, body }));
    expect((await call({ 'content-type': 'application/json', origin: 'http://127.0.0.1:1' })).status).toBe(401);
    expect((await call({ 'content-type': 'text/plain' })).status).toBeGreaterThanOrEqual(400);
    // Same origin and JSON: it reaches the procedure (no such pairing code here).
    const ok = await call({ 'content-type': 'application/json', origin: s.url });
    expect((await ok.json())[0].error.data.code).toBe('invalid_request');
  });
});

describe('tRPC on node:http (npm start)', () => {
  const auth = { authorization: `Bearer ${TEST_TOKEN}` };
  it('answers a query, gzipped for a client that takes it', async () => {
    const sessionKey = 'agent:main:gzip-node';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey, message: 'x'.repeat(4000) });
    await s.rpc('agent.wait', { runId });
    const input = encodeURIComponent(JSON.stringify({ sessionKey }));
    const res = await fetch(`${trpcOrigin}/api/trpc/chat.history?input=${input}`, { headers: { ...auth, 'accept-encoding': 'gzip' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-encoding')).toBe('gzip');
    expect((await res.json()).result.data.messages.at(-1).content).toHaveLength(4000);
    const plain = await fetch(`${trpcOrigin}/api/trpc/chat.history?input=${input}`, { headers: { ...auth, 'accept-encoding': 'identity' } });
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect((await plain.json()).result.data.messages.at(-1).content).toHaveLength(4000);
  });

  it('streams a session’s events over SSE, and lets go when the client does', async () => {
    const ac = new AbortController();
    const input = encodeURIComponent(JSON.stringify({ sessionKey: 'agent:main:sse-node' }));
    const res = await fetch(`${trpcOrigin}/api/trpc/events.onEvent?input=${input}`, { headers: auth, signal: ac.signal });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    const until = async (what: string) => {
      while (!text.includes(what)) {
        const { done, value } = await reader.read();
        if (done) throw new Error(`stream ended before ${what}`);
        text += value;
      }
    };
    await until('event: connected');
    const before = s.rt.bus.subscriberCount;
    await s.rpc('agent', { sessionKey: 'agent:main:sse-node', message: 'hello' });
    await until('"stream":"lifecycle"');
    ac.abort();
    await expect.poll(() => s.rt.bus.subscriberCount).toBeLessThan(before);
  });
});
