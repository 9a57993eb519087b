// Crashes the entry-point fuzz found, each pinned: a malformed call is the protocol's invalid-request/params answer, never -32603 or `internal`.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer } from '../testing/harness';

let s: TestServer;
let trpc: http.Server;
let trpcUrl: string;
beforeAll(async () => {
  s = await startTestServer();
  trpc = http.createServer((req, res) => s.rt.nodeApi(req, res));
  await new Promise<void>((r) => trpc.listen(0, '127.0.0.1', r));
  trpcUrl = `http://127.0.0.1:${(trpc.address() as AddressInfo).port}`;
});
afterAll(async () => {
  trpc?.closeAllConnections();
  await new Promise<void>((r) => (trpc ? trpc.close(() => r()) : r()));
  await s?.close();
});

const auth = { authorization: `Bearer ${TEST_TOKEN}` };
const post = async (url: string, body: string, headers: Record<string, string>) => {
  const res = await fetch(url, { method: 'POST', headers: { ...auth, ...headers }, body });
  return { status: res.status, body: await res.json() };
};

describe('tRPC', () => {
  it("tRPC's own refusals (a query POSTed, a body that is not JSON) carry data.code invalid_request, not internal", async () => {
    const wrongMethod = await post(`${trpcUrl}/api/trpc/sessions.list`, '{}', { 'content-type': 'application/json' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.body.error.data).toMatchObject({ code: 'invalid_request' });
    const wrongType = await post(`${trpcUrl}/api/trpc/sessions.patch`, '{}', { 'content-type': 'text/plain' });
    expect(wrongType.status).toBe(415);
    expect(wrongType.body.error.data).toMatchObject({ code: 'invalid_request' });
  });

  it('input refusals say what JSON-RPC says: an unknown key is named in its path; a cursor with NUL is invalid_cursor', async () => {
    const get = async (proc: string, input: unknown) => {
      const res = await fetch(`${trpcUrl}/api/trpc/${proc}?input=${encodeURIComponent(JSON.stringify(input))}`, { headers: auth });
      return (await res.json()).error.data;
    };
    // Before: issues [{path: '', message: 'Unrecognized key: "foo"'}].
    expect(await get('chat.history', { sessionKey: 'agent:main:main', foo: 1 })).toMatchObject({ code: 'invalid_request', issues: [{ path: 'foo', message: 'unknown key "foo"' }] });
    // Before: invalid_request with no issues.
    expect(await get('chat.history', { sessionKey: 'agent:main:main', cursor: 'a\u0000b' })).toMatchObject({ code: 'invalid_cursor', issues: [{ path: 'cursor' }] });
    const rpc = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'chat.history', params: { sessionKey: 'agent:main:main', cursor: 'a\u0000b' } });
    expect(rpc.body.error.data.code).toBe('invalid_cursor');
  });
});

describe('A2A v0.3 params are checked before the SDK translates them', () => {
  const a2a = (method: string, params: unknown) => post(`${s.url}/a2a/main`, JSON.stringify({ jsonrpc: '2.0', id: 3, method, params }), { 'content-type': 'application/json' });
  it.each([
    ['tasks/pushNotificationConfig/set', { id: 5 }],
    ['tasks/pushNotificationConfig/set', { taskId: 'x' }],
    ['tasks/pushNotificationConfig/get', { id: { text: false } }],
    ['tasks/pushNotificationConfig/delete', { id: 'x' }],
    ['tasks/get', { id: ['x'] }],
    ['message/send', { message: { messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'hi' }] }, configuration: { acceptedOutputModes: 'text' } }],
    ['message/send', { message: { messageId: 'm', role: 'user', parts: [{ kind: 'file' }] } }],
  ])('%s %j is -32602', async (method, params) => {
    const r = await a2a(method, params);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ jsonrpc: '2.0', id: 3, error: { code: -32602 } });
  });
  it('a well-formed v0.3 send still runs', async () => {
    const r = await a2a('message/send', { message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'hello' }], contextId: 'edge-1', metadata: null } });
    expect(r.body.result).toMatchObject({ kind: 'task', contextId: 'edge-1', status: { state: 'completed' } });
  });
});

describe('MCP', () => {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  it.each([
    ['initialize', { name: 'crosstalk_agents' }],
    ['initialize', { protocolVersion: '2025-11-25', capabilities: 'x', clientInfo: { name: 'c', version: '1' } }],
    ['tools/call', { name: 'crosstalk_agents', arguments: 'not an object' }],
    ['tools/call', { arguments: {} }],
  ])('%s with params %j is JSON-RPC -32602, not -32603', async (method, params) => {
    const r = await post(`${s.url}/mcp`, JSON.stringify({ jsonrpc: '2.0', id: 9, method, params }), headers);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ jsonrpc: '2.0', id: 9, error: { code: -32602 } });
  });
  it('a body with a leading BOM is read as the SDK reads it (its params checked too)', async () => {
    const body = `\uFEFF${JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'initialize', params: { capabilities: 'x' } })}`;
    const r = await post(`${s.url}/mcp`, body, headers);
    expect(r.body).toMatchObject({ id: 4, error: { code: -32602 } });
  });
});
