// An elicitation item lives no longer than the MCP call that raised it: when the call is over however it ended (the
// server's request timed out and its cancellation never came), the item is cancelled, not left pending.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
import type { McpCallInfo } from './call-info';
import { Elicitations } from './elicitation';
import { type ElicitHttpServer, startElicitHttpServer } from './testing/elicit-http-server';

const STDIO_SERVER = path.join(import.meta.dirname, 'testing', 'stdio-server.mjs');

let s: TestServer;
let web: ElicitHttpServer;
beforeAll(async () => {
  web = await startElicitHttpServer();
  s = await startTestServer({
    config: {
      agents: [{ id: 'main', tools: { 'mcp__files__*': 'auto', 'mcp__web__*': 'auto' } }],
      mcp: { servers: { files: { command: process.execPath, args: [STDIO_SERVER] }, web: { url: web.url } } },
    },
  });
  // The servers' tools are listed before a test's first call (a test run alone has no earlier test to wait for it).
  await until(async () => {
    const tools = (await s.rpc<{ agents: Array<{ mcpTools?: Array<{ name: string }> }> }>('agents.list')).agents[0].mcpTools ?? [];
    return tools.some((t) => t.name === 'mcp__files__always_step') && tools.some((t) => t.name === 'mcp__web__confirm');
  });
});
afterAll(async () => {
  await s?.close();
  await web?.close();
});

const pendingOf = async (key: string) => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals.filter((a) => a.kind === 'elicitation');
const everAsked = async (key: string) => (await s.rpc<{ approvals: any[] }>('approvals.history', { sessionKey: key })).approvals.filter((a) => a.kind === 'elicitation');

describe('an elicitation', () => {
  it('is cancelled when the MCP call that raised it ends without waiting for the answer', async () => {
    const key = 'agent:main:elicit-ended';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/sleep 2000' });
    const ended = new AbortController();
    const call: McpCallInfo = { runId, sessionKey: key, callId: 'call_x', tool: 'ask', signal: new AbortController().signal, ended: ended.signal };
    const asks = new Elicitations({ store: s.rt.store, bus: s.rt.bus, log: s.rt.log });
    const answer = asks.ask('srv', 'mcp__srv__ask', call, { message: 'Really?', requestedSchema: { type: 'object', properties: { sure: { type: 'boolean' } } } } as never, new AbortController().signal);
    const item = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals.find((a) => a.kind === 'elicitation'));
    expect(item).toMatchObject({ kind: 'elicitation', message: 'Really?' });
    ended.abort(); // the call is over: the server no longer waits
    expect(await answer).toEqual({ action: 'cancel' });
    expect((await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals).toEqual([]);
    expect(await s.rt.store.getApproval(item.approvalId)).toMatchObject({ status: 'cancelled', decision: 'cancel', reason: 'the tool call ended without waiting for the answer' });
    await s.rpc('agent.wait', { runId });
  });

  it("keeps the server's whole requestedSchema: a value its pattern refuses is -32602 with the item still pending, a good one reaches the server (probe C)", async () => {
    const key = 'agent:main:elicit-pattern';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/tool mcp__files__code {}' });
    const item = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals.find((a) => a.kind === 'elicitation'));
    // Before: the SDK's request schema had stripped `pattern` before the item was stored; "abc-12" was accepted and the
    // server refused it (tool_error), the person's answer lost.
    expect(item.requestedSchema.properties.code).toMatchObject({ type: 'string', pattern: '^[A-Z]{3}-[0-9]{2}$' });
    const bad = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'approvals.resolve', params: { approvalId: item.approvalId, decision: 'accept', content: { code: 'abc-12' } } });
    expect(bad.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request', issues: [{ path: 'content.code' }] } });
    expect((await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals.map((a) => a.approvalId)).toEqual([item.approvalId]);
    await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'accept', content: { code: 'ABC-12' } });
    const done = await s.rpc<{ status: string; response: string }>('agent.wait', { runId });
    expect(done.status).toBe('ok');
    expect(done.response).toContain('{\\"action\\":\\"accept\\",\\"content\\":{\\"code\\":\\"ABC-12\\"}}');
  });

  it('asked by error (-32042, URLElicitationRequiredError): a url item on the call; once the person is through, the call is made again and answers', async () => {
    const key = 'agent:main:elicit-by-error';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/tool mcp__files__browser_step {}' });
    const item = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals.find((a) => a.kind === 'elicitation'));
    expect(item).toMatchObject({ mode: 'url', url: 'https://provider.example/authorize?x=1', message: 'Sign in to the provider' });
    await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'accept' });
    const done = await s.rpc<{ status: string; response: string }>('agent.wait', { runId, timeoutMs: 20_000 });
    // Before: no item, and the call answered invalid_request with "MCP error -32042: MCP error -32042: …".
    expect(done).toMatchObject({ status: 'ok', response: expect.stringContaining('signed in and done') });
  });

  it('asked by error again after every browser step: the call answers the error once the person has been through twice, its code said once; content on a url accept is refused', async () => {
    const key = 'agent:main:elicit-always';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/tool mcp__files__always_step {}' });
    const pending = () => s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key }).then((r) => r.approvals.find((a) => a.kind === 'elicitation'));
    const first = await until(pending);
    expect(first).toMatchObject({ mode: 'url', url: 'https://provider.example/again' });
    // A url step takes no content: given some, the answer is refused, not accepted with the content dropped.
    const refused = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'approvals.resolve', params: { approvalId: first.approvalId, decision: 'accept', content: { code: '1234' } } });
    expect(refused.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request' } });
    expect(await s.rt.store.getApproval(first.approvalId)).toMatchObject({ status: 'pending' });
    await s.rpc('approvals.resolve', { approvalId: first.approvalId, decision: 'accept' });
    const second = await until(async () => ((await pending())?.approvalId !== first.approvalId ? pending() : undefined));
    await s.rpc('approvals.resolve', { approvalId: second.approvalId, decision: 'accept' });
    const done = await s.rpc<{ status: string; response: string }>('agent.wait', { runId, timeoutMs: 20_000 });
    // A JSON-RPC error for the call is the tool's error (before: invalid_request, as if the model's call were malformed).
    expect(done.response).toContain('"code":"tool_error"');
    expect(done.response).toContain('MCP error -32042: This request requires browser-based authorization.');
    // Before: "MCP error -32042: MCP error -32042: This request …".
    expect(done.response.match(/MCP error -32042/g)).toHaveLength(1);
  });

  it("of a second session calling a streamable HTTP server meanwhile is that session's item, and answering either leaves the other waiting", async () => {
    const one = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:elicit-one', message: '/tool mcp__web__confirm {"message":"for one"}' });
    const [first] = await until(() => pendingOf('agent:main:elicit-one').then((x) => (x.length ? x : null)));
    const two = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:elicit-two', message: '/tool mcp__web__confirm {"message":"for two"}' });
    const [second] = await until(() => pendingOf('agent:main:elicit-two').then((x) => (x.length ? x : null)));
    expect(first).toMatchObject({ sessionKey: 'agent:main:elicit-one', runId: one.runId, message: 'for one' });
    expect(second).toMatchObject({ sessionKey: 'agent:main:elicit-two', runId: two.runId, message: 'for two' });
    expect(await pendingOf('agent:main:elicit-one')).toHaveLength(1);
    await s.rpc('approvals.resolve', { approvalId: first.approvalId, decision: 'accept', content: { sure: true } });
    expect(await s.rpc('agent.wait', { runId: one.runId })).toMatchObject({ status: 'ok', response: expect.stringContaining('\\"sure\\":true') });
    // The first call is over: the second's question still waits.
    expect(await pendingOf('agent:main:elicit-two')).toHaveLength(1);
    await s.rpc('approvals.resolve', { approvalId: second.approvalId, decision: 'accept', content: { sure: false } });
    expect(await s.rpc('agent.wait', { runId: two.runId })).toMatchObject({ status: 'ok', response: expect.stringContaining('\\"sure\\":false') });
  });

  it("asked by session B's call while session A's slow call to the same streamable HTTP server is in flight is B's item while A's call goes on, and A's end leaves it (probe P)", async () => {
    const A = 'agent:main:elicit-http-a';
    const B = 'agent:main:elicit-http-b';
    const a = await s.rpc<{ runId: string }>('agent', { sessionKey: A, message: '/tool mcp__web__slow {"ms":120000}' });
    const b = await s.rpc<{ runId: string }>('agent', { sessionKey: B, message: '/tool mcp__web__confirm {"message":"for B"}' });
    const [item] = await until(() => pendingOf(B).then((x) => (x.length ? x : null)));
    // Before: the item was raised on A's session and run with B's message, and cancelled when A's call ended.
    expect(item).toMatchObject({ sessionKey: B, runId: b.runId, message: 'for B' });
    expect(await s.rpc('agent.wait', { runId: a.runId, timeoutMs: 0 })).toMatchObject({ status: 'timeout' }); // A's call still runs
    await s.rpc('agent.cancel', { runId: a.runId });
    expect(await s.rpc('agent.wait', { runId: a.runId })).toMatchObject({ status: 'error' });
    expect(await pendingOf(B)).toHaveLength(1);
    expect(await everAsked(A)).toEqual([]);
    await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'accept', content: { sure: true } });
    expect(await s.rpc('agent.wait', { runId: b.runId })).toMatchObject({ status: 'ok', response: expect.stringContaining('\\"sure\\":true') });
  });

  it("asked by session B's call while session A's call to the same stdio server is in flight waits for A's call to end, then is B's item: never A's (probe P)", async () => {
    const A = 'agent:main:elicit-stdio-a';
    const B = 'agent:main:elicit-stdio-b';
    const a = await s.rpc<{ runId: string }>('agent', { sessionKey: A, message: '/tool mcp__files__slow {"ms":1500}' });
    const b = await s.rpc<{ runId: string }>('agent', { sessionKey: B, message: '/tool mcp__files__confirm {}' });
    const [item] = await until(() => pendingOf(B).then((x) => (x.length ? x : null)));
    // Before: raised on A's session and run at once with B's question; A's end cancelled it and B's server got `cancel`.
    expect(item).toMatchObject({ sessionKey: B, runId: b.runId, message: 'Really do it?' });
    expect(await s.rpc('agent.wait', { runId: a.runId })).toMatchObject({ status: 'ok', response: expect.stringContaining('slow done') });
    expect(await everAsked(A)).toEqual([]);
    await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'accept', content: { sure: true } });
    expect(await s.rpc('agent.wait', { runId: b.runId })).toMatchObject({ status: 'ok', response: expect.stringContaining('\\"sure\\":true') });
  });

  it("of a second session calling the same stdio server while the first's question waits is raised once the first's call is over, on the second session", async () => {
    const one = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:elicit-s1', message: '/tool mcp__files__confirm {}' });
    const [first] = await until(() => pendingOf('agent:main:elicit-s1').then((x) => (x.length ? x : null)));
    const two = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:elicit-s2', message: '/tool mcp__files__confirm {}' });
    // MCP over stdio does not say which call asked: the first's tool may ask again. Not shown to either until it can be told.
    await s.rpc('approvals.resolve', { approvalId: first.approvalId, decision: 'accept', content: { sure: true } });
    expect(await s.rpc('agent.wait', { runId: one.runId })).toMatchObject({ status: 'ok', response: expect.stringContaining('\\"sure\\":true') });
    const [second] = await until(() => pendingOf('agent:main:elicit-s2').then((x) => (x.length ? x : null)));
    expect(second).toMatchObject({ sessionKey: 'agent:main:elicit-s2', runId: two.runId });
    expect((await everAsked('agent:main:elicit-s1')).map((x) => x.approvalId)).toEqual([first.approvalId]);
    await s.rpc('approvals.resolve', { approvalId: second.approvalId, decision: 'accept', content: { sure: false } });
    expect(await s.rpc('agent.wait', { runId: two.runId })).toMatchObject({ status: 'ok', response: expect.stringContaining('\\"sure\\":false') });
  });
});
