// JSON nested past 64 levels is an invalid request (-32600) on every entry point, in that protocol's form, never a 500 or -32603.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer } from '../testing/harness';
import { bodyTooDeep, jsonTooDeep, MAX_JSON_DEPTH } from './json-depth';

/** JSON text of `levels` nested objects ({"a":{"a":…{"x":1}}}), built as text: JSON.stringify itself overflows on 10,000. */
const nested = (levels: number) => '{"a":'.repeat(levels - 1) + '{"x":1}' + '}'.repeat(levels - 1);
const nestedArrays = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
/** A JSON-RPC request with this params text. */
const rpcWith = (method: string, paramsText: string, id: number | string = 7) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":${JSON.stringify(method)},"params":${paramsText}}`;
const auth = { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` };

describe('jsonTooDeep', () => {
  it('counts object and array levels, skipping brackets inside strings and escaped quotes', () => {
    expect(jsonTooDeep(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonTooDeep(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonTooDeep(nestedArrays(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonTooDeep(nested(MAX_JSON_DEPTH + 1), 1)).toBe(false);
    expect(jsonTooDeep(nested(MAX_JSON_DEPTH + 2), 1)).toBe(true);
    expect(jsonTooDeep(JSON.stringify({ s: '['.repeat(10_000), t: '\\"{{{{' + '{'.repeat(100) }))).toBe(false);
    expect(jsonTooDeep(`{"s":"\\\\"}${nestedArrays(70)}`)).toBe(true);
    // Siblings do not add up: a wide document is not a deep one.
    expect(jsonTooDeep(JSON.stringify(Array.from({ length: 1000 }, () => [[[{ a: [1] }]]])))).toBe(false);
    expect(jsonTooDeep(nestedArrays(1_000_000))).toBe(true);
  });

  it('a form body is measured by its JSON-looking values (payload=<json>, as Slack posts)', () => {
    expect(bodyTooDeep(`payload=${encodeURIComponent(nested(65))}`)).toBe(true);
    expect(bodyTooDeep(`payload=${encodeURIComponent(nested(64))}&x=1`)).toBe(false);
    expect(bodyTooDeep('text=' + '['.repeat(100))).toBe(true);
    expect(bodyTooDeep('just some text with [[[ brackets')).toBe(false);
  });
});

let s: TestServer;
/** The runtime's tRPC handler (what `npm start` routes /api/trpc/* to) on a loopback server of its own. */
let trpc: http.Server;
let trpcUrl: string;

beforeAll(async () => {
  s = await startTestServer({ config: { channels: { webhook: { secret: 'depth' } } } });
  trpc = http.createServer((req, res) => s.rt.nodeApi(req, res));
  await new Promise<void>((r) => trpc.listen(0, '127.0.0.1', r));
  trpcUrl = `http://127.0.0.1:${(trpc.address() as AddressInfo).port}`;
});
afterAll(async () => {
  trpc?.closeAllConnections();
  await new Promise<void>((r) => (trpc ? trpc.close(() => r()) : r()));
  await s?.close();
});

const post = async (url: string, body: string, headers: Record<string, string> = auth) => {
  const res = await fetch(url, { method: 'POST', headers, body });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : null };
};

describe('JSON-RPC /api/gateway', () => {
  it('65 levels of params are -32600 invalid_request (not -32602); 64 levels reach the method', async () => {
    const r = await post(`${s.url}/api/gateway`, rpcWith('status', nested(65)));
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32600, data: { code: 'invalid_request' } } });
    const agent = await post(`${s.url}/api/gateway`, rpcWith('agent', `{"sessionKey":"agent:main:deep","message":"hi","webhook":${nested(64)}}`));
    expect(agent.body.error).toMatchObject({ code: -32600, data: { code: 'invalid_request' } });
    // 64 levels in all: past the depth check, refused by the method's own schema (an unknown key), not as too deep.
    const ok = await post(`${s.url}/api/gateway`, rpcWith('status', nested(64)));
    expect(ok.body.error).toMatchObject({ code: -32602 });
    expect(ok.body.error.message).not.toContain('nested');
  });

  it('10,000 levels of params, of arrays, and inside a batch: -32600, never HTTP 500 internal; the server still serves', async () => {
    for (const body of [rpcWith('agent', nested(10_000)), rpcWith('status', `{"x":${nestedArrays(10_000)}}`), `[${rpcWith('status', '{}', 1)},${rpcWith('status', nested(66), 2)}]`]) {
      const r = await post(`${s.url}/api/gateway`, body);
      expect(r.status).toBe(200);
      const one = Array.isArray(r.body) ? r.body[0] : r.body;
      expect(one.error).toMatchObject({ code: -32600, data: { code: 'invalid_request' } });
    }
    expect(await s.rpc('status', {})).toHaveProperty('activeRuns');
  });
});

describe('tRPC /api/trpc', () => {
  const refused = (r: { status: number; body: any }) => {
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: -32600, data: { code: 'invalid_request', httpStatus: 400 } });
  };
  it('a mutation whose input nests 65 or 10,000 levels is tRPC invalid request (400, -32600), not a 500', async () => {
    refused(await post(`${trpcUrl}/api/trpc/sessions.patch`, nested(65)));
    refused(await post(`${trpcUrl}/api/trpc/sessions.patch`, nested(10_000)));
    refused(await post(`${trpcUrl}/api/trpc/sessions.patch?batch=1`, `{"0":${nested(65)}}`));
    // 64 levels reach the procedure (and its input schema answers).
    const r = await post(`${trpcUrl}/api/trpc/sessions.patch`, nested(64));
    expect(r.status).toBe(400);
    expect(r.body.error.message).not.toContain('nested');
  });

  it('a query whose input (in the query string) nests 65 levels is refused the same way', async () => {
    const res = await fetch(`${trpcUrl}/api/trpc/sessions.list?input=${encodeURIComponent(nested(65))}`, { headers: auth });
    refused({ status: res.status, body: await res.json() });
    const batch = await fetch(`${trpcUrl}/api/trpc/sessions.list?batch=1&input=${encodeURIComponent(`{"0":${nestedArrays(2000)}}`)}`, { headers: auth });
    refused({ status: batch.status, body: await batch.json() });
  });
});

describe('A2A /a2a/<agentId>', () => {
  const send = (deep: string, version?: string) =>
    post(
      `${s.url}/a2a/main`,
      rpcWith(version ? 'SendMessage' : 'message/send', `{"message":{"messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}],"metadata":${deep}}}`),
      { ...auth, ...(version ? { 'A2A-Version': version } : {}) },
    );
  it('a message nesting past 64 levels is JSON-RPC -32600 on v0.3 and v1.0, never -32603', async () => {
    for (const version of [undefined, '1.0']) {
      for (const deep of [nested(63), nested(10_000)]) {
        const r = await send(deep, version);
        expect(r.status).toBe(200);
        expect(r.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32600 } });
      }
    }
  });
});

describe('MCP /mcp', () => {
  it('tool arguments nesting past 64 levels are JSON-RPC -32600 (HTTP 400), never an internal error', async () => {
    const headers = { ...auth, accept: 'application/json, text/event-stream' };
    for (const deep of [nested(64), nested(10_000)]) {
      const r = await post(`${s.url}/mcp`, rpcWith('tools/call', `{"name":"crosstalk_agents","arguments":${deep}}`), headers);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: -32600, data: { code: 'invalid_request' } });
    }
    // Shallow requests still reach the SDK.
    const list = await fetch(`${s.url}/mcp`, { method: 'POST', headers, body: rpcWith('tools/list', '{}') });
    expect(list.status).toBe(200);
    expect(await list.text()).toContain('crosstalk_agents');
  });
});

describe('channel inbound /api/channels/<channel>', () => {
  it('a webhook payload nesting past 64 levels is 400 invalid_request, JSON or form, before the channel parses it', async () => {
    const sign = (raw: string) => ({ 'content-type': 'application/json', 'x-crosstalk-signature': `sha256=${crypto.createHmac('sha256', 'depth').update(raw).digest('hex')}` });
    for (const raw of [nested(65), nestedArrays(100_000), `{"from":"u1","text":"hi","meta":${nested(64)}}`]) {
      const r = await post(`${s.url}/api/channels/webhook`, raw, sign(raw));
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ ok: false, error: { code: 'invalid_request', message: expect.stringContaining('64') } });
    }
    const form = `payload=${encodeURIComponent(nested(200))}`;
    const r = await post(`${s.url}/api/channels/slack`, form, { 'content-type': 'application/x-www-form-urlencoded' });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_request');
  });
});
