// MCP tools behind approvals, against real MCP servers built with the official SDK: one over stdio, one over streamable HTTP.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, tmpDataDir, until } from '../testing/harness';
import { startMcpHttpServer, type TestMcpHttpServer } from './testing/http-server';

const STDIO_SERVER = path.join(import.meta.dirname, 'testing', 'stdio-server.mjs');

let s: TestServer | undefined;
let http: TestMcpHttpServer | undefined;
afterEach(async () => {
  await s?.close();
  await http?.close();
  s = http = undefined;
});

function stdioServer(logFile: string) {
  return { command: process.execPath, args: [STDIO_SERVER], env: { MCP_TEST_LOG: logFile } };
}

async function start(config: Record<string, unknown>) {
  s = await startTestServer({ config });
  await s.rt.mcp.ready();
  return s;
}

async function runTo(srv: TestServer, sessionKey: string, message: string) {
  const { runId } = await srv.rpc<{ runId: string }>('agent', { sessionKey, message });
  return runId;
}

const wait = (srv: TestServer, runId: string) => srv.rpc<{ status: string; response?: string; error?: string }>('agent.wait', { runId, timeoutMs: 20_000 });

async function pendingApproval(srv: TestServer, sessionKey: string) {
  return until(async () => (await srv.rpc<{ approvals: any[] }>('approvals.list', { sessionKey })).approvals[0]);
}

describe('MCP over stdio', () => {
  it('offers the server tools as mcp__<server>__<tool>, asks by default (hints never trusted), then runs the call', async () => {
    const log = path.join(tmpDataDir(), 'mcp.log');
    const srv = await start({
      agents: [{ id: 'main' }, { id: 'blind', mcp: [] }, { id: 'strict', tools: { 'mcp__files__*': 'deny', mcp__files__echo: 'auto' } }],
      mcp: { servers: { files: stdioServer(log) } },
    });
    const { agents } = await srv.rpc<{ agents: any[] }>('agents.list');
    const main = agents.find((a) => a.agentId === 'main');
    expect(main.tools.mcp__files__echo).toBe('ask');
    expect(main.tools.mcp__files__remove_all).toBe('ask');
    const removeAll = main.mcpTools.find((t: any) => t.name === 'mcp__files__remove_all');
    expect(removeAll).toMatchObject({ server: 'files', tool: 'remove_all', policy: 'ask', annotations: { destructiveHint: true, readOnlyHint: true } });
    expect(Object.keys(agents.find((a) => a.agentId === 'blind').tools).filter((t) => t.startsWith('mcp__'))).toEqual([]);
    const strict = agents.find((a) => a.agentId === 'strict');
    expect(strict.tools.mcp__files__echo).toBe('auto');
    expect(strict.tools.mcp__files__remove_all).toBe('deny');

    // A read-only hint does not make a call auto: it waits for a decision, and the card gets server, tool and hints.
    const key = 'agent:main:main';
    const runId = await runTo(srv, key, '/tool mcp__files__echo {"text":"hi"}');
    const approval = await pendingApproval(srv, key);
    expect(approval).toMatchObject({ tool: 'mcp__files__echo', args: { text: 'hi' } });
    const requested = await until(async () =>
      (await srv.rt.store.eventsAfter({ after: { id: 0 }, runId, limit: 100 })).rows.find((e) => e.stream === 'approval' && JSON.parse(e.data).phase === 'requested'),
    );
    expect(JSON.parse(requested.data).source).toEqual({ kind: 'mcp', server: 'files', tool: 'echo', annotations: { readOnlyHint: true } });
    await srv.rpc('approvals.resolve', { approvalId: approval.approvalId, decision: 'allow_once' });
    const done = await wait(srv, runId);
    expect(done.status).toBe('ok');
    expect(done.response).toBe('mcp__files__echo: {"status":"ok","content":[{"type":"text","text":"echo hi"}],"structuredContent":{"echoed":"hi"}}');

    // The wildcard denies, the exact name allows; an agent that does not see the server cannot call its tools.
    const strictRun = await runTo(srv, 'agent:strict:main', '/tool mcp__files__remove_all {}\n/tool mcp__files__echo {"text":"ok"}');
    const strictDone = await wait(srv, strictRun);
    expect(strictDone.response).toContain('mcp__files__remove_all: {"status":"denied"');
    expect(strictDone.response).toContain('"text":"echo ok"');
    const blind = await wait(srv, await runTo(srv, 'agent:blind:main', '/tool mcp__files__echo {"text":"x"}'));
    expect(blind.response).toContain('unknown tool mcp__files__echo');
    // A tool's own failure reaches the model as data.
    const fail = await runTo(srv, key, '/tool mcp__files__fail {}');
    await srv.rpc('approvals.resolve', { approvalId: (await pendingApproval(srv, key)).approvalId, decision: 'allow_once' });
    expect((await wait(srv, fail)).response).toBe('mcp__files__fail: {"status":"error","error":{"code":"tool_error","message":"it broke"},"content":[{"type":"text","text":"it broke"}]}');
  });

  it('a denied call never reaches the server', async () => {
    const log = path.join(tmpDataDir(), 'mcp.log');
    const srv = await start({ mcp: { servers: { files: stdioServer(log) } } });
    const key = 'agent:main:main';
    const runId = await runTo(srv, key, '/tool mcp__files__slow {"ms":1}');
    const approval = await pendingApproval(srv, key);
    await srv.rpc('approvals.resolve', { approvalId: approval.approvalId, decision: 'deny', reason: 'not now' });
    const done = await wait(srv, runId);
    expect(done.response).toBe('mcp__files__slow: {"status":"denied","reason":"not now"}');
    expect(fs.readFileSync(log, 'utf8')).not.toContain('slow started');
  });

  it('a server that crashes mid-call answers tool_unavailable, is reported, and comes back', async () => {
    const log = path.join(tmpDataDir(), 'mcp.log');
    const srv = await start({ agents: [{ id: 'main', tools: { 'mcp__files__*': 'auto' } }], mcp: { servers: { files: stdioServer(log) }, reconnectBaseMs: 50 } });
    const key = 'agent:main:main';
    const crashed = await wait(srv, await runTo(srv, key, '/tool mcp__files__crash {}'));
    expect(crashed.status).toBe('ok');
    expect(crashed.response).toMatch(/^mcp__files__crash: \{"status":"error","error":\{"code":"tool_unavailable"/);
    // Reported as an event on the default agent's main session; the gateway keeps answering.
    await until(async () => (await srv.rt.store.eventsAfter({ after: { id: 0 }, sessionKey: key, limit: 500 })).rows.find((e) => e.stream === 'error' && JSON.parse(e.data).server === 'files'));
    await until(async () => (await srv.rpc<any>('status')).mcp?.[0]?.state === 'ready');
    const again = await wait(srv, await runTo(srv, key, '/tool mcp__files__echo {"text":"back"}'));
    expect(again.response).toContain('"text":"echo back"');
    expect(fs.readFileSync(log, 'utf8').match(/^start /gm)?.length).toBe(2);
  });

  it('a tool-list change notification refreshes the tools', async () => {
    const log = path.join(tmpDataDir(), 'mcp.log');
    const srv = await start({ agents: [{ id: 'main', tools: { 'mcp__files__*': 'auto' } }], mcp: { servers: { files: stdioServer(log) } } });
    const key = 'agent:main:main';
    const tools = async () => (await srv.rpc<{ agents: any[] }>('agents.list')).agents[0].tools as Record<string, string>;
    expect((await tools()).mcp__files__fresh).toBeUndefined();
    await wait(srv, await runTo(srv, key, '/tool mcp__files__add_tool {"name":"fresh"}'));
    await until(async () => (await tools()).mcp__files__fresh === 'auto');
    const ran = await wait(srv, await runTo(srv, key, '/tool mcp__files__fresh {}'));
    expect(ran.response).toContain('"text":"fresh ran"');
  });

  it('a server that cannot start does not stop the gateway, and is reported once, not at every retry', async () => {
    const errors: string[] = [];
    const srv = await start({ mcp: { servers: { broken: { command: path.join(tmpDataDir(), 'no-such-binary') } }, reconnectBaseMs: 10, reconnectMaxMs: 20 } });
    const off = srv.rt.bus.onEvent((ev) => void (ev.stream === 'error' && ev.data.source === 'mcp' && errors.push(String(ev.data.message))));
    const st = await srv.rpc<any>('status');
    // Failed, or (retried every 10–20 ms here) trying again.
    expect(st.mcp).toEqual([expect.objectContaining({ server: 'broken', state: expect.stringMatching(/^(failed|connecting)$/) })]);
    const done = await wait(srv, await runTo(srv, 'agent:main:main', 'hello'));
    expect(done.response).toBe('echo: hello');
    // Dozens of retries in a second: before, an `error` event (and a warning) for each.
    await new Promise((r) => setTimeout(r, 1000));
    off();
    // Its one report came before this listener, or (start returned before the first spawn failed: seen under CI load)
    // within the second: never one per retry.
    expect(errors.length).toBeLessThanOrEqual(1);
    expect((await srv.rpc<any>('status')).mcp[0]).toMatchObject({ state: expect.stringMatching(/^(failed|connecting)$/) });
  });
});

describe('MCP over streamable HTTP', () => {
  it('runs an approved call with the configured headers, caps big output, and survives the server going away', async () => {
    http = await startMcpHttpServer();
    const port = http.port;
    const srv = await start({ mcp: { servers: { search: { url: http.url, headers: { authorization: 'Bearer mcp-secret' } } }, reconnectBaseMs: 50, pingIntervalMs: 100 } });
    const key = 'agent:main:main';
    const runId = await runTo(srv, key, '/tool mcp__search__lookup {"word":"otter"}');
    await srv.rpc('approvals.resolve', { approvalId: (await pendingApproval(srv, key)).approvalId, decision: 'allow_always' });
    expect((await wait(srv, runId)).response).toBe('mcp__search__lookup: {"status":"ok","content":[{"type":"text","text":"otter: a word"}]}');
    expect(http.seen).toContain('lookup otter');
    expect(http.seen).toContain('auth Bearer mcp-secret');

    const big = await runTo(srv, key, '/tool mcp__search__big {}');
    await srv.rpc('approvals.resolve', { approvalId: (await pendingApproval(srv, key)).approvalId, decision: 'allow_once' });
    const bigDone = await wait(srv, big);
    const result = JSON.parse(bigDone.response!.slice('mcp__search__big: '.length));
    expect(result.truncated).toBe(true);
    expect(result.content[0].text.length).toBe(64 * 1024);

    await http.close();
    // Noticed while idle (a failed ping), reported on the status before any call.
    await until(async () => (await srv.rpc<any>('status')).mcp?.[0]?.state === 'failed');
    const down = await wait(srv, await runTo(srv, key, '/tool mcp__search__lookup {"word":"gone"}'));
    expect(down.response).toMatch(/"code":"tool_unavailable"/);
    http = await startMcpHttpServer(port);
    await until(async () => (await srv.rpc<any>('status')).mcp?.[0]?.state === 'ready');
    const back = await wait(srv, await runTo(srv, key, '/tool mcp__search__lookup {"word":"again"}'));
    expect(back.response).toContain('again: a word');
  });

  it('a server that goes away mid-call (its response stream cut) answers the call tool_unavailable at once, without waiting for a ping', async () => {
    http = await startMcpHttpServer();
    // No pings: the call's own broken stream is what tells. Before, the call waited (CALL_TIMEOUT_MS, an hour) and the
    // status said ready until some other call or a ping found the server gone.
    const srv = await start({ agents: [{ id: 'main', tools: { 'mcp__search__*': 'auto' } }], mcp: { servers: { search: { url: http.url } }, reconnectBaseMs: 60_000, pingIntervalMs: 0 } });
    const done = await wait(srv, await runTo(srv, 'agent:main:main', '/tool mcp__search__die {}'));
    expect(http.seen).toContain('die');
    expect(done.status).toBe('ok');
    expect(done.response).toMatch(/^mcp__search__die: .*"code":"tool_unavailable"/);
    expect((await srv.rpc<any>('status')).mcp?.[0]?.state).toBe('failed');
  });

  it('agent.cancel during a slow MCP call cancels the MCP request', async () => {
    http = await startMcpHttpServer();
    const srv = await start({ agents: [{ id: 'main', tools: { mcp__search__slow: 'auto' } }], mcp: { servers: { search: { url: http.url } } } });
    const runId = await runTo(srv, 'agent:main:main', '/tool mcp__search__slow {"ms":60000}');
    await until(() => http!.seen.includes('slow started'));
    await srv.rpc('agent.cancel', { runId });
    const done = await wait(srv, runId);
    expect(done).toMatchObject({ status: 'error', error: 'cancelled' });
    await until(() => http!.seen.includes('slow cancelled'));
  });
});
