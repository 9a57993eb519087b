// Real MCP servers from the npm registry (issue 23 items 1, 3, 6): @modelcontextprotocol/server-everything and
// server-filesystem started over stdio, their tools called through the real run loop behind approvals; elicitation.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { settledEvents, startTestServer, type TestServer, tmpDataDir, until } from '../testing/harness';

const require = createRequire(import.meta.url);
const pkgDir = (name: string) => path.dirname(require.resolve(`${name}/package.json`));
const EVERYTHING = path.join(pkgDir('@modelcontextprotocol/server-everything'), 'dist', 'index.js');
const FILESYSTEM = path.join(pkgDir('@modelcontextprotocol/server-filesystem'), 'dist', 'index.js');

let s: TestServer | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

const KEY = 'agent:main:main';

async function start(config: Record<string, unknown>) {
  s = await startTestServer({ config });
  await s.rt.mcp.ready(20_000);
  return s;
}

const tools = async (srv: TestServer) => (await srv.rpc<{ agents: any[] }>('agents.list')).agents[0].tools as Record<string, string>;
const send = async (srv: TestServer, message: string) => (await srv.rpc<{ runId: string }>('agent', { sessionKey: KEY, message })).runId;
const wait = (srv: TestServer, runId: string) => srv.rpc<{ status: string; response?: string; error?: string }>('agent.wait', { runId, timeoutMs: 30_000 });
const pending = (srv: TestServer, kind?: string) =>
  until(async () => (await srv.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: KEY })).approvals.find((a) => !kind || a.kind === kind), 20_000);
const rpcError = async (srv: TestServer, method: string, params: unknown) => (await srv.rpcRaw({ jsonrpc: '2.0', id: 1, method, params })).body.error;
const resultOf = (response: string | undefined, tool: string) => JSON.parse(response!.slice(`${tool}: `.length));

const everything = { command: process.execPath, args: [EVERYTHING, 'stdio'] };

describe('server-everything over stdio', () => {
  it('lists its tools (the elicitation ones too: the capability is declared) and runs one behind an approval', async () => {
    const srv = await start({ mcp: { servers: { everything } } });
    // Its elicitation tools are registered only for a client that declares elicitation (form; URL for the url one).
    const t = await until(async () => ((await tools(srv))['mcp__everything__trigger-url-elicitation'] ? tools(srv) : undefined), 20_000);
    expect(t['mcp__everything__trigger-elicitation-request']).toBe('ask');
    expect(t.mcp__everything__echo).toBe('ask');
    const runId = await send(srv, '/tool mcp__everything__get-sum {"a":2,"b":3}');
    const approval = await pending(srv, 'tool');
    expect(approval).toMatchObject({ tool: 'mcp__everything__get-sum', args: { a: 2, b: 3 } });
    await srv.rpc('approvals.resolve', { approvalId: approval.approvalId, decision: 'allow_once' });
    const done = await wait(srv, runId);
    expect(resultOf(done.response, 'mcp__everything__get-sum').status).toBe('ok');
    expect(done.response).toContain('5');
  });

  it('shows a long-running operation’s progress as tool update events', async () => {
    const srv = await start({ agents: [{ id: 'main', tools: { 'mcp__everything__*': 'auto' } }], mcp: { servers: { everything } } });
    const runId = await send(srv, '/tool mcp__everything__trigger-long-running-operation {"duration":0.6,"steps":3}');
    const done = await wait(srv, runId);
    expect(done.response).toContain('Long running operation completed');
    const evs = (await settledEvents(srv.rt, { runId })).map((e) => ({ stream: e.stream, data: JSON.parse(e.data) }));
    const updates = evs.filter((e) => e.stream === 'tool' && e.data.phase === 'update').map((e) => e.data.progress);
    expect(updates).toEqual([1, 2, 3].map((progress) => ({ progress, total: 3 })));
  });

  it('an elicitation becomes a pending item on the calling session; the server gets exactly the answer, defaults filled', async () => {
    const srv = await start({ agents: [{ id: 'main', tools: { 'mcp__everything__*': 'auto' } }], mcp: { servers: { everything } } });
    await until(async () => (await tools(srv))['mcp__everything__trigger-elicitation-request'], 20_000);
    const tool = 'mcp__everything__trigger-elicitation-request';

    // accept: invalid content is -32602 and leaves the item pending; valid content gets the schema's defaults.
    let runId = await send(srv, `/tool ${tool} {}`);
    let item = await pending(srv, 'elicitation');
    expect(item).toMatchObject({ kind: 'elicitation', server: 'everything', tool, mode: 'form', message: 'Please provide inputs for the following fields:', sessionKey: KEY, runId, parentChain: [KEY] });
    expect(item.requestedSchema.properties.name).toMatchObject({ type: 'string', title: 'String' });
    const bad = await rpcError(srv, 'approvals.resolve', { approvalId: item.approvalId, decision: 'accept', content: { integer: 500 } });
    expect(bad).toMatchObject({ code: -32602 });
    const wrongDecision = await rpcError(srv, 'approvals.resolve', { approvalId: item.approvalId, decision: 'allow_once' });
    expect(wrongDecision).toMatchObject({ code: -32602 });
    expect((await srv.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: KEY })).approvals).toHaveLength(1);
    await srv.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'accept', content: { name: 'Ada', check: true, untitledMultipleSelectEnum: ['Piano', 'Bass'], titledSingleSelectEnum: 'hero-3' } });
    let done = await wait(srv, runId);
    const raw = JSON.parse(/Raw result: ([\s\S]*?)"\}\]\}$/.exec(done.response!)![1]!.replace(/\\n/g, '\n').replace(/\\"/g, '"'));
    expect(raw).toEqual({
      action: 'accept',
      content: {
        name: 'Ada',
        check: true,
        untitledMultipleSelectEnum: ['Piano', 'Bass'],
        titledSingleSelectEnum: 'hero-3',
        firstLine: 'It was a dark and stormy night.',
        integer: 42,
        number: 3.14,
        untitledSingleSelectEnum: 'Monica',
        titledMultipleSelectEnum: ['fish-1'],
        legacyTitledEnum: 'pet-1',
      },
    });
    const again = await rpcError(srv, 'approvals.resolve', { approvalId: item.approvalId, decision: 'decline' });
    expect(again).toMatchObject({ code: -32009, data: { code: 'already_resolved' } });

    // decline and cancel reach the server as such.
    for (const decision of ['decline', 'cancel'] as const) {
      runId = await send(srv, `/tool ${tool} {}`);
      item = await pending(srv, 'elicitation');
      await srv.rpc('approvals.resolve', { approvalId: item.approvalId, decision });
      done = await wait(srv, runId);
      expect(done.response).toContain(`\\"action\\": \\"${decision}\\"`);
    }
    const rows = await srv.rt.store.db.selectFrom('approvals').select(['decision', 'status']).where('kind', '=', 'elicitation').orderBy('requested_at').execute();
    expect(rows).toEqual([
      { decision: 'accept', status: 'allowed' },
      { decision: 'decline', status: 'denied' },
      { decision: 'cancel', status: 'cancelled' },
    ]);
  });

  it('an elicitation inside a delegate shows on its parent chain (approvals.list, the board)', async () => {
    const srv = await start({ agents: [{ id: 'main' }, { id: 'researcher', tools: { 'mcp__everything__*': 'auto' } }], mcp: { servers: { everything } } });
    const tool = 'mcp__everything__trigger-elicitation-request';
    await until(async () => (await srv.rpc<{ agents: any[] }>('agents.list')).agents[1].tools[tool], 20_000);
    await send(srv, `/tool delegate_agent {"agent_id":"researcher","prompt":"/tool ${tool} {}","mode":"detached"}`);
    const item = await until(async () => (await srv.rpc<{ approvals: any[] }>('approvals.list', {})).approvals.find((a) => a.kind === 'elicitation'), 20_000);
    expect(item.sessionKey).toMatch(/^agent:researcher:subagent:/);
    expect(item.parentChain).toEqual([KEY, item.sessionKey]);
    const board = await until(async () => (await srv.rpc<{ needsInput: any[] }>('runs.board', {})).needsInput.find((i) => i.runId === item.runId));
    expect(board.parentChain).toEqual([KEY, item.sessionKey]);
    await srv.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'cancel' });
    const done = await wait(srv, item.runId);
    expect(done.response).toContain('\\"action\\": \\"cancel\\"');
  });

  it('a URL elicitation is an item with the url; accept reaches the server', async () => {
    const srv = await start({ agents: [{ id: 'main', tools: { 'mcp__everything__*': 'auto' } }], mcp: { servers: { everything } } });
    const tool = 'mcp__everything__trigger-url-elicitation';
    await until(async () => (await tools(srv))[tool], 20_000);
    const runId = await send(srv, `/tool ${tool} {"url":"https://example.com/consent","message":"Open it"}`);
    const item = await pending(srv, 'elicitation');
    expect(item).toMatchObject({ kind: 'elicitation', mode: 'url', url: 'https://example.com/consent', message: 'Open it', server: 'everything' });
    expect(item.requestedSchema).toBeUndefined();
    await srv.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'accept' });
    const done = await wait(srv, runId);
    expect(done.status).toBe('ok');
    expect(done.response).toMatch(/accept/);
  });

  it('cancelling the run while its elicitation waits cancels the elicitation and closes the item', async () => {
    const srv = await start({ agents: [{ id: 'main', tools: { 'mcp__everything__*': 'auto' } }], mcp: { servers: { everything } } });
    const tool = 'mcp__everything__trigger-elicitation-request';
    await until(async () => (await tools(srv))[tool], 20_000);
    const runId = await send(srv, `/tool ${tool} {}`);
    const item = await pending(srv, 'elicitation');
    await srv.rpc('agent.cancel', { runId });
    expect((await wait(srv, runId)).error).toBe('cancelled');
    await until(async () => (await srv.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: KEY })).approvals.length === 0);
    const row = await srv.rt.store.getApproval(item.approvalId);
    expect(row).toMatchObject({ status: 'cancelled', decision: 'cancel' });
  });
});

describe('elicitation across a process death', () => {
  it('the call answers interrupted after the restart and the item is closed, never left pending', async () => {
    const dataDir = tmpDataDir();
    const config = { agents: [{ id: 'main', tools: { 'mcp__everything__*': 'auto' } }], mcp: { servers: { everything } } };
    const tool = 'mcp__everything__trigger-elicitation-request';
    const a = await startTestServer({ dataDir, config });
    await until(async () => (await tools(a))[tool], 20_000);
    const runId = await send(a, `/tool ${tool} {}`);
    const item = await pending(a, 'elicitation');
    await a.crash();
    await a.rt.mcp.stop(); // the stdio server dies with its process

    s = await startTestServer({ dataDir, config });
    const done = await wait(s, runId);
    expect(resultOf(done.response, tool).error.code).toBe('interrupted');
    expect((await s.rpc<{ approvals: any[] }>('approvals.list', {})).approvals).toEqual([]);
    expect(await s.rt.store.getApproval(item.approvalId)).toMatchObject({ status: 'cancelled', decision: 'cancel', reason: 'interrupted: the process running the call stopped' });
  });
});

describe('server-filesystem over stdio', () => {
  it('reads inside its allowed folder; "Access denied" reaches the model as tool_error with the server’s text', async () => {
    const root = fs.realpathSync(tmpDataDir('crosstalk-fs-'));
    fs.writeFileSync(path.join(root, 'note.txt'), 'hello from the file');
    const srv = await start({ mcp: { servers: { fs: { command: process.execPath, args: [FILESYSTEM, root] } } } });
    expect((await tools(srv)).mcp__fs__read_text_file).toBe('ask');

    let runId = await send(srv, `/tool mcp__fs__read_text_file {"path":${JSON.stringify(path.join(root, 'note.txt'))}}`);
    await srv.rpc('approvals.resolve', { approvalId: (await pending(srv, 'tool')).approvalId, decision: 'allow_once' });
    expect((await wait(srv, runId)).response).toContain('hello from the file');

    runId = await send(srv, '/tool mcp__fs__read_text_file {"path":"/etc/hostname"}');
    await srv.rpc('approvals.resolve', { approvalId: (await pending(srv, 'tool')).approvalId, decision: 'allow_once' });
    const result = resultOf((await wait(srv, runId)).response, 'mcp__fs__read_text_file');
    expect(result.status).toBe('error');
    expect(result.error.code).toBe('tool_error');
    expect(result.error.message).toMatch(/^Access denied - path outside allowed directories: \/etc\/hostname not in /);
  });
});
