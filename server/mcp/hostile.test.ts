// MCP servers that try to stall or exhaust the gateway (issue 21.6), against a real SDK-built server over HTTP:
// endless pages, too many tools, unusable and colliding definitions, a catastrophic output pattern, an oversize result.
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { MAX_LIST_PAGES, MAX_MESSAGE_BYTES, MAX_TOOLS } from './limits';
import { type HostileMcpServer, type HostileMode, startHostileMcpServer } from './testing/hostile-server';

let s: TestServer | undefined;
let mcp: HostileMcpServer | undefined;
afterEach(async () => {
  await s?.close();
  await mcp?.close();
  s = mcp = undefined;
});

async function start(mode: HostileMode) {
  mcp = await startHostileMcpServer(mode);
  s = await startTestServer({ config: { agents: [{ id: 'main', tools: { 'mcp__h__*': 'auto' } }], mcp: { servers: { h: { url: mcp.url } } } } });
  await s.rt.mcp.ready();
  return s;
}

const status = async (srv: TestServer) => (await srv.rpc<any>('status')).mcp[0];
const mcpTools = async (srv: TestServer) => ((await srv.rpc<{ agents: any[] }>('agents.list')).agents[0].mcpTools as any[]).map((t) => t.name).sort();

async function turn(srv: TestServer, message: string) {
  const { runId } = await srv.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:main', message });
  return srv.rpc<{ status: string; response: string }>('agent.wait', { runId, timeoutMs: 30_000 });
}

describe('hostile MCP servers', () => {
  it('a server that always answers nextCursor is read up to the page cap, and its tools are offered', async () => {
    const srv = await start('endless');
    const st = await status(srv);
    expect(st.state).toBe('ready');
    expect(st.tools).toBe(MAX_LIST_PAGES);
    expect(mcp!.pages()).toBe(MAX_LIST_PAGES);
    expect(st.skipped).toEqual([{ tool: '*', reason: `the server kept answering nextCursor; the list was read up to ${MAX_LIST_PAGES} pages` }]);
  });

  it('a server with more tools than the cap has the first ones offered and the rest reported', async () => {
    const srv = await start('many');
    const st = await status(srv);
    expect(st.tools).toBe(MAX_TOOLS);
    expect(st.skipped).toEqual([{ tool: '*', reason: `the server offers more than ${MAX_TOOLS} tools; ${2000 - MAX_TOOLS} were left out` }]);
  });

  it('unusable and colliding tools are left out and reported (status, log event); the rest of the server works', async () => {
    const srv = await start('mixed');
    const st = await status(srv);
    expect(st.state).toBe('ready');
    expect(await mcpTools(srv)).toEqual(['mcp__h__a_b', 'mcp__h__flood', 'mcp__h__ok', 'mcp__h__redos']);
    const reasons = Object.fromEntries((st.skipped as Array<{ tool: string; reason: string }>).map((x) => [x.tool, x.reason]));
    expect(Object.keys(reasons).sort()).toEqual(['a.b', 'array_top', 'bad_type', 'huge']);
    expect(reasons.bad_type).toContain('type "strnig" is not a JSON Schema type');
    expect(reasons.array_top).toContain('inputSchema.type');
    expect(reasons.huge).toMatch(/definition is \d+ bytes/);
    expect(reasons['a.b']).toBe('its name becomes mcp__h__a_b, which another tool of this server already has');
    // The kept a_b is the tool named so, not the one that sanitises to it.
    const agents = (await srv.rpc<{ agents: any[] }>('agents.list')).agents;
    expect(agents[0].mcpTools.find((t: any) => t.name === 'mcp__h__a_b').tool).toBe('a_b');
    const event = await until(async () =>
      (await srv.rt.store.eventsAfter({ after: { id: 0 }, sessionKey: 'agent:main:main', limit: 500 })).rows.find((e) => e.stream === 'error' && JSON.parse(e.data).skipped),
    );
    expect(JSON.parse(event.data)).toMatchObject({ code: 'tool_unavailable', source: 'mcp', server: 'h' });
    expect(JSON.parse(event.data).skipped.map((x: any) => x.tool).sort()).toEqual(['a.b', 'array_top', 'bad_type', 'huge']);
    const done = await turn(srv, '/tool mcp__h__ok {"x":"1"}\n/tool mcp__h__a_b {}');
    expect(done.response).toBe('mcp__h__ok: {"status":"ok","content":[{"type":"text","text":"ok ran"}]}\nmcp__h__a_b: {"status":"ok","content":[{"type":"text","text":"a_b ran"}]}');
  });

  it('a catastrophic output-schema pattern is never run: the call answers', async () => {
    const srv = await start('plain');
    const done = await turn(srv, '/tool mcp__h__redos {}');
    expect(done.status).toBe('ok');
    expect(done.response).toMatch(/^mcp__h__redos: \{"status":"ok".*"structuredContent":\{"s":"a+!"\}/);
  });

  it('a result over the message cap is not read: the call answers tool_unavailable and the server comes back', async () => {
    const srv = await start('plain');
    const done = await turn(srv, '/tool mcp__h__flood {}');
    expect(done.response).toMatch(/^mcp__h__flood: \{"status":"error","error":\{"code":"tool_unavailable"/);
    expect(done.response).toContain(`over ${MAX_MESSAGE_BYTES} bytes`);
    await until(async () => (await status(srv)).state === 'ready');
    expect((await turn(srv, '/tool mcp__h__ok {}')).response).toBe('mcp__h__ok: {"status":"ok","content":[{"type":"text","text":"ok ran"}]}');
  });

  it('over stdio too: a result line over the cap is not parsed; the call answers tool_unavailable and the server comes back', async () => {
    s = await startTestServer({
      config: { agents: [{ id: 'main', tools: { 'mcp__files__*': 'auto' } }], mcp: { servers: { files: { command: process.execPath, args: [path.join(import.meta.dirname, 'testing', 'stdio-server.mjs')] } } } },
    });
    await s.rt.mcp.ready();
    const done = await turn(s, '/tool mcp__files__flood {}');
    expect(done.response).toMatch(/^mcp__files__flood: \{"status":"error","error":\{"code":"tool_unavailable"/);
    expect(done.response).toContain(`over ${MAX_MESSAGE_BYTES} bytes`);
    await until(async () => (await status(s!)).state === 'ready');
    expect((await turn(s, '/tool mcp__files__echo {"text":"still here"}')).response).toMatch(/^mcp__files__echo: \{"status":"ok"/);
  });
});
