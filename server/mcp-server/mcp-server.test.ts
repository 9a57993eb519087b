// crosstalk as an MCP server (CONTRACT §10), driven by the official SDK's own client over real HTTP on loopback.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { startTestServer, TEST_TOKEN, type TestServer, until } from '../testing/harness';

let s: TestServer;
let client: Client;

async function connect(token = TEST_TOKEN): Promise<Client> {
  const c = new Client({ name: 'test-client', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return c;
}

beforeAll(async () => {
  s = await startTestServer();
  client = await connect();
});
afterAll(async () => {
  await client?.close();
  await s?.close();
});

type Structured = Record<string, any>;
const call = async (name: string, args: Record<string, unknown>) => {
  const r = await client.callTool({ name, arguments: args });
  return r as { isError?: boolean; structuredContent?: Structured; content: Array<{ type: string; text: string }> };
};

describe('crosstalk as an MCP server', () => {
  it('lists its four tools with JSON schemas', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['crosstalk_agents', 'crosstalk_history', 'crosstalk_send', 'crosstalk_wait']);
    const send = tools.find((t) => t.name === 'crosstalk_send')!;
    expect(send.inputSchema.required).toEqual(['message']);
    expect(Object.keys(send.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(['sessionKey', 'agentId', 'message', 'mode', 'timeoutSeconds']));
  });

  it('crosstalk_agents answers as agents.list', async () => {
    const r = await call('crosstalk_agents', {});
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toEqual(await s.rpc('agents.list', {}));
    expect(JSON.parse(r.content[0]!.text)).toEqual(r.structuredContent);
  });

  it('a sync send answers with the reply, and reports progress while the target runs when asked', async () => {
    const progress: Array<{ progress: number; message?: string }> = [];
    const r = (await client.callTool({ name: 'crosstalk_send', arguments: { agentId: 'researcher', message: '/sleep 150\n/reply from the researcher' } }, CallToolResultSchema, {
      onprogress: (p) => void progress.push(p),
    })) as { isError?: boolean; structuredContent?: Structured };
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ status: 'ok', response: 'from the researcher', deliveryId: expect.stringMatching(/^dlv_/) });
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.map((p) => p.message)).toContain('lifecycle start');
    expect(progress.map((p) => p.progress)).toEqual(progress.map((_, i) => i + 1)); // rising, as the spec asks
    const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:researcher:main' });
    expect(h.messages.map((m) => m.content)).toEqual(['from the researcher', '/sleep 150\n/reply from the researcher']);
  });

  it('an async send answers at once; crosstalk_wait and crosstalk_history see the run', async () => {
    const r = await call('crosstalk_send', { sessionKey: 'agent:writer:mcp-test', message: '/reply later', mode: 'async' });
    expect(r.structuredContent).toMatchObject({ status: 'accepted', runId: expect.any(String), deliveryId: expect.stringMatching(/^dlv_/) });
    const w = await call('crosstalk_wait', { runId: r.structuredContent!.runId, timeoutSeconds: 10 });
    expect(w.structuredContent).toMatchObject({ status: 'ok', response: 'later' });
    // The delivery names the run it started (CONTRACT §9 `runId`) and was answered by it.
    const d = await s.rpc('deliveries.get', { deliveryId: r.structuredContent!.deliveryId });
    expect(d).toMatchObject({ kind: 'session_message', state: 'answered', runId: r.structuredContent!.runId, to: { sessionKey: 'agent:writer:mcp-test' } });
    const h = await call('crosstalk_history', { sessionKey: 'agent:writer:mcp-test', limit: 1 });
    expect(h.structuredContent!.messages).toEqual([expect.objectContaining({ role: 'assistant', content: 'later' })]);
    expect(h.structuredContent!.next_cursor).toEqual(expect.any(String));
  });

  it('a sync send that outlasts its timeout says so, delivered', async () => {
    const r = await call('crosstalk_send', { sessionKey: 'agent:main:mcp-slow', message: '/sleep 1500\n/reply late', timeoutSeconds: 0.1 });
    expect(r.structuredContent).toMatchObject({ status: 'timeout', delivered: true, runId: expect.any(String), deliveryId: expect.stringMatching(/^dlv_/) });
    const w = await call('crosstalk_wait', { runId: r.structuredContent!.runId, timeoutSeconds: 10 });
    expect(w.structuredContent).toMatchObject({ status: 'ok', response: 'late' });
  });

  it('bad arguments are a tool error naming the field; a domain error carries its §6 code', async () => {
    const bad = await call('crosstalk_send', { message: 5 });
    expect(bad.isError).toBe(true);
    expect(bad.content[0]!.text).toMatch(/^invalid_request: message: /);
    const extra = await call('crosstalk_history', { sessionKey: 'agent:main:main', nope: 1 });
    expect(extra.isError).toBe(true);
    expect(extra.content[0]!.text).toContain('nope');
    const unknown = await call('crosstalk_send', { agentId: 'nobody', message: 'hi' });
    expect(unknown.isError).toBe(true);
    expect(unknown.structuredContent).toMatchObject({ status: 'error', error: { code: 'unknown_agent' } });
    const run = await call('crosstalk_wait', { runId: 'run_does_not_exist' });
    expect(run.structuredContent).toMatchObject({ error: { code: 'unknown_run' } });
    // An agent id that cannot make a session key names agentId, not the key made from it.
    const badAgent = await call('crosstalk_send', { agentId: 'Bad Agent', message: 'x' });
    expect(badAgent.isError).toBe(true);
    expect(badAgent.content[0]!.text).toMatch(/^invalid_request: agentId: /);
    expect(badAgent.structuredContent).toMatchObject({ error: { code: 'invalid_request', issues: [{ path: 'agentId' }] } });
  });

  it('crosstalk_wait on a run that failed answers as agent.wait does; a sync send to it keeps its ids', async () => {
    const sent = await call('crosstalk_send', { sessionKey: 'agent:main:mcp-fail', message: '/fail broke' });
    expect(sent.isError).toBe(true);
    expect(sent.structuredContent).toMatchObject({ status: 'error', runId: expect.any(String), deliveryId: expect.stringMatching(/^dlv_/), error: { code: 'internal' } });
    const runId = sent.structuredContent!.runId as string;
    const w = await call('crosstalk_wait', { runId, timeoutSeconds: 10 });
    expect(w.isError).toBeFalsy();
    const { usage: _u, ...direct } = await s.rpc<Record<string, unknown>>('agent.wait', { runId });
    expect(w.structuredContent).toMatchObject(direct);
    expect(w.structuredContent).toMatchObject({ status: 'error', error: expect.stringContaining('broke') });
  });

  it('an unknown tool name is JSON-RPC -32602', async () => {
    const err = await client.callTool({ name: 'crosstalk_nope', arguments: {} }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(McpError);
    expect((err as McpError).code).toBe(-32602);
    expect((err as McpError).message).toBe('MCP error -32602: unknown tool: crosstalk_nope'); // the client's prefix once
  });

  it('notifications/cancelled (in a POST of its own) stops a sync crosstalk_send waiting, unanswered (MCP), while the target run goes on', async () => {
    const key = 'agent:main:mcp-cancelled';
    const post = (body: unknown) =>
      fetch(`${s.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TEST_TOKEN}` }, body: JSON.stringify(body) });
    const answered = post({ jsonrpc: '2.0', id: 'call-to-cancel', method: 'tools/call', params: { name: 'crosstalk_send', arguments: { sessionKey: key, message: '/sleep 4000\n/reply finished anyway', timeoutSeconds: 60 } } }).then((r) => r.text());
    const runId = await until(() => s.rt.store.activeRunOf(key));
    expect((await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'call-to-cancel', reason: 'no longer needed' } })).status).toBe(202);
    // MCP: the receiver of a cancel does not answer the cancelled request; the POST's stream ends without an answer
    // (before: a tool result for "call-to-cancel").
    expect(await answered).not.toContain('call-to-cancel');
    // The call let go while the target still ran (before: it answered "finished anyway" once the run had ended).
    expect(await s.rpc('agent.wait', { runId, timeoutMs: 0 })).toMatchObject({ status: 'timeout' });
    expect(await s.rpc('agent.wait', { runId, timeoutMs: 10_000 })).toMatchObject({ status: 'ok', response: 'finished anyway' });
  });

  it('a cancelled call of a batch goes unanswered, and the other calls of that POST are answered', async () => {
    const post = (body: unknown) =>
      fetch(`${s.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TEST_TOKEN}` }, body: JSON.stringify(body) });
    const answered = post([
      // Answered at once: the cancelled call's answer then comes in a read of its own (before, that stalled the stream).
      { jsonrpc: '2.0', id: 'quick-one', method: 'tools/call', params: { name: 'crosstalk_agents', arguments: {} } },
      { jsonrpc: '2.0', id: 'slow-one', method: 'tools/call', params: { name: 'crosstalk_send', arguments: { sessionKey: 'agent:main:mcp-cancel-a', message: '/sleep 4000\n/reply late', timeoutSeconds: 60 } } },
      { jsonrpc: '2.0', id: 'kept-one', method: 'tools/call', params: { name: 'crosstalk_send', arguments: { sessionKey: 'agent:main:mcp-cancel-b', message: '/sleep 300\n/reply kept answer', timeoutSeconds: 60 } } },
    ]).then((r) => r.text());
    await until(() => s.rt.store.activeRunOf('agent:main:mcp-cancel-a'));
    expect((await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow-one' } })).status).toBe(202);
    const text = await answered;
    const answers = text
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => JSON.parse(l.slice(5)) as { id?: unknown; result?: { structuredContent?: { response?: string } } });
    expect(answers.map((a) => a.id)).toEqual(['quick-one', 'kept-one']);
    expect(answers[1]!.result?.structuredContent?.response).toBe('kept answer');
  });

  it('a batch holding a request with invalid params runs none of it and answers every request in it', async () => {
    const key = 'agent:main:mcp-batch-held';
    const res = await fetch(`${s.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TEST_TOKEN}` },
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'crosstalk_send', arguments: { sessionKey: key, message: '/reply batched', mode: 'async' } } },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 7 } },
        { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 9 } },
      ]),
    });
    const body = await res.json();
    expect(body).toMatchObject([
      { id: 1, error: { code: -32600, message: expect.stringContaining('request 2 of this batch has invalid params') } },
      { id: 2, error: { code: -32602 } },
    ]);
    expect(body).toHaveLength(2);
    // Not run: the session was never made.
    expect(await s.rt.store.getSession(key)).toBeFalsy();
    // An unknown tool name is invalid params as well: it holds the batch back too. Before, the first call ran.
    const unknown = await fetch(`${s.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TEST_TOKEN}` },
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'crosstalk_send', arguments: { sessionKey: key, message: '/reply batched', mode: 'async' } } },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'crosstalk_nope', arguments: {} } },
      ]),
    });
    expect(await unknown.json()).toMatchObject([
      { id: 1, error: { code: -32600, message: expect.stringContaining('request 2 of this batch has invalid params') } },
      { id: 2, error: { code: -32602, message: expect.stringContaining('unknown tool: crosstalk_nope') } },
    ]);
    expect(await s.rt.store.getSession(key)).toBeFalsy();
  });

  it('valid JSON that is not JSON-RPC (an empty batch, an object without jsonrpc and method, an id null or 1.5) is -32600, not a parse error', async () => {
    const post = (body: string) =>
      fetch(`${s.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TEST_TOKEN}` }, body });
    // Before: `[]` was 202 with no body, `{"foo":1}` -32700 "Parse error".
    for (const body of ['[]', '{"foo":1}', '[{"jsonrpc":"2.0","id":1,"method":"ping"},7]', '"ping"']) {
      const res = await post(body);
      expect(res.status, body).toBe(400);
      expect(await res.json(), body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600, data: { code: 'invalid_request' } } });
    }
    // An id that is not a string or an integer (MCP ids are never null): not a request. Before: -32700 "Parse error".
    for (const id of ['null', '{"a":1}', 'true', '1.5']) {
      const body = `{"jsonrpc":"2.0","id":${id},"method":"tools/list"}`;
      const res = await post(body);
      expect(res.status, body).toBe(400);
      expect(await res.json(), body).toMatchObject({ error: { code: -32600, data: { code: 'invalid_request' } } });
    }
    const parse = await post('{nope');
    expect((await parse.json()).error.code).toBe(-32700);
  });

  it('needs the bearer token, and refuses a foreign Origin', async () => {
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    const post = (headers: Record<string, string>) =>
      fetch(`${s.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(init) });
    const none = await post({});
    expect(none.status).toBe(401);
    expect((await none.json()).error.data.code).toBe('unauthorized');
    // RFC 6750 §3.1: no token, the scheme alone; a wrong one, invalid_token (before: the scheme alone for both).
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    const wrong = await post({ authorization: 'Bearer wrong' });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    const foreign = await post({ authorization: `Bearer ${TEST_TOKEN}`, origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    expect((await foreign.json()).error.data.code).toBe('forbidden');
    const ok = await post({ authorization: `Bearer ${TEST_TOKEN}` });
    expect(ok.status).toBe(200);
    await ok.body?.cancel();
  });

  it('refuses a browser on a Host it does not answer to (DNS rebinding), with the token; a client without an Origin may use any name', async () => {
    const status = (host: string, origin?: string) =>
      new Promise<number>((resolve, reject) => {
        const u = new URL(`${s.url}/mcp`);
        const headers = { host, authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(origin ? { origin } : {}) };
        const req = http.request({ host: u.hostname, port: u.port, path: '/mcp', method: 'POST', headers }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }));
      });
    // A rebound page: its Origin and the Host are both the attacker's name.
    expect(await status('evil.example:3000', 'http://evil.example:3000')).toBe(403);
    expect(await status(`localhost:${new URL(s.url).port}`, `http://localhost:${new URL(s.url).port}`)).toBe(200);
    // An MCP client reaching the server by a service name (no Origin): the token is what counts.
    expect(await status('crosstalk:3000')).toBe(200);
    expect(await status(`localhost:${new URL(s.url).port}`)).toBe(200);
  });
});
