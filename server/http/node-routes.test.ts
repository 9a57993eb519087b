// runtime.nodeApi (server/http/node-routes.ts): `npm start` serves every gateway route on its own thread, with the
// non-document headers, and hands everything else (pages, assets) on untouched: the pages' worker has no runtime.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer } from '../testing/harness';

let s: TestServer;
let srv: http.Server;
let base = '';
let handedOn: string[] = [];

beforeAll(async () => {
  s = await startTestServer();
  // As scripts/start.mjs: the runtime's routes first, the rest to the pages (here a marker).
  srv = http.createServer((req, res) => {
    if (s.rt.nodeApi(req, res)) return;
    handedOn.push(req.url ?? '');
    res.writeHead(299, { 'content-type': 'text/plain' }).end('page');
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
});
afterAll(async () => {
  if (srv) {
    srv.closeAllConnections();
    await new Promise((r) => srv.close(r));
  }
  await s?.close();
});

const auth = { authorization: `Bearer ${TEST_TOKEN}` };

describe('runtime.nodeApi', () => {
  it('hands pages, assets and look-alike paths on without answering them', async () => {
    handedOn = [];
    for (const p of ['/', '/?session=agent%3Amain%3Amain', '/_next/static/chunks/a.js', '/manifest.webmanifest', '/apix', '/mcpx', '/loginx', '/a2a']) {
      const res = await fetch(base + p, { redirect: 'manual' });
      expect(res.status, p).toBe(299);
      expect(res.headers.get('content-security-policy'), p).toBeNull();
    }
    expect(handedOn).toHaveLength(8);
  });

  it('serves the gateway, its event stream, health, A2A and login itself, each with the non-document headers', async () => {
    handedOn = [];
    const rpc = await fetch(`${base}/api/gateway`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'agents.list', params: {} }) });
    expect(rpc.status).toBe(200);
    expect(((await rpc.json()) as { result: { agents: unknown[] } }).result.agents.length).toBeGreaterThan(0);
    const health = await fetch(`${base}/api/health`);
    expect(await health.json()).toEqual({ status: 'ok' });
    for (const res of [rpc, health]) {
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
    }
    expect((await fetch(`${base}/api/gateway/events?sessionKey=agent:main:main`)).status).toBe(401);
    const card = await fetch(`${base}/a2a/main/.well-known/agent-card.json`);
    expect(card.status).toBe(200);
    expect(((await card.json()) as { name: string }).name).toBeTruthy();
    const login = await fetch(`${base}/login?token=${TEST_TOKEN}`, { redirect: 'manual' });
    expect(login.status).toBe(303);
    expect(login.headers.get('set-cookie')).toMatch(/^crosstalk_token=/);
    expect((await fetch(`${base}/login?token=wrong`, { redirect: 'manual' })).status).toBe(401);
    expect(handedOn).toEqual([]);
  });

  it('answers a wrong method 405 and an unknown API path 404, as invalid_request', async () => {
    for (const [method, p, status] of [['GET', '/api/gateway', 405], ['POST', '/login', 405], ['GET', '/api/nope', 404]] as const) {
      const res = await fetch(base + p, { method, headers: auth });
      expect(res.status, `${method} ${p}`).toBe(status);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
    }
  });

  it("runtime.roomQuery answers the pages' worker a query as JSON text, as the API would, and no mutation", async () => {
    const viaApi = (await (await fetch(`${base}/api/trpc/agents.list?input=${encodeURIComponent('{}')}`, { headers: auth })).json()) as { result: { data: unknown } };
    expect(JSON.parse(await s.rt.roomQuery('agents.list', {}))).toEqual(viaApi.result.data);
    await expect(s.rt.roomQuery('sessions.patch', { key: 'agent:main:main', label: 'x' })).rejects.toThrow('no query sessions.patch');
    await expect(s.rt.roomQuery('nope.nothing', {})).rejects.toThrow('no query nope.nothing');
    // Invalid input is refused by the procedure's own validation, as over HTTP.
    await expect(s.rt.roomQuery('chat.history', { sessionKey: 42 })).rejects.toThrow();
  });
});

describe('isApiPath', () => {
  it('reads the path as a router resolves it: dot segments and %2e do not take an API path to the pages', async () => {
    const { isApiPath } = await import('./node-routes');
    // Before: false for each, so npm start forwarded them (with its key) to the pages' worker, where Next resolved
    // them to app/api/* and booted a second runtime (probe H).
    for (const p of ['/./api/health', '/x/../api/health', '/%2e/api/health', '/x/%2E%2E/api/gateway', '/./mcp', '/a/../login?token=t', '/%2e/a2a/main'])
      expect(isApiPath(p), p).toBe(true);
    for (const p of ['/', '/?session=agent:main:main', '/_next/static/x.js', '/apis', '/x/.hidden', '/mcpx']) expect(isApiPath(p), p).toBe(false);
  });
});
