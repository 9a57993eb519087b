// What a hostile MCP server asks of the gateway (README "Limits"), against a real SDK-built server over HTTP: a form
// whose pattern backtracks for ever, roots it has none of, and JSON-RPC errors for answers.
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { type AskingMcpServer, REDOS_FORM, RPC_ERROR_MESSAGE, startAskingMcpServer } from './testing/asking-server';

let s: TestServer | undefined;
let mcp: AskingMcpServer | undefined;
afterEach(async () => {
  await s?.close();
  await mcp?.close();
  s = mcp = undefined;
});

async function start() {
  mcp = await startAskingMcpServer();
  s = await startTestServer({ config: { agents: [{ id: 'main', tools: { 'mcp__h__*': 'auto' } }], mcp: { servers: { h: { url: mcp.url } } } } });
  await s.rt.mcp.ready();
  return s;
}

const call = async (srv: TestServer, sessionKey: string, tool: string) => {
  const { runId } = await srv.rpc<{ runId: string }>('agent', { sessionKey, message: `/tool mcp__h__${tool} {}` });
  return { runId, done: () => srv.rpc<{ status: string; response: string }>('agent.wait', { runId, timeoutMs: 30_000 }) };
};
const toolResult = (response: string) => JSON.parse(response.slice(response.indexOf(': ') + 2));

describe('a hostile MCP server asks', () => {
  it("a form whose pattern backtracks for ever: accepting it answers at once, refusing the field, and the gateway goes on (probe: a minute's freeze)", async () => {
    const srv = await start();
    const key = 'agent:main:redos';
    const { done } = await call(srv, key, 'redos_form');
    const item = await until(async () => (await srv.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals.find((a) => a.kind === 'elicitation'));
    expect(item.requestedSchema).toEqual(REDOS_FORM);
    const t = Date.now();
    // Nothing given: the field's default (29 a's and a !) is checked against the server's pattern.
    const accept = await srv.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'approvals.resolve', params: { approvalId: item.approvalId, decision: 'accept', content: {} } });
    // Before: the check ran the pattern on V8's backtracking engine and held the event loop (and the gateway) ~60 s.
    const ms = Date.now() - t;
    expect(accept.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request', issues: [{ path: 'content.word', message: 'must match pattern "^(a+)+$"' }] } });
    expect(ms).toBeLessThan(2000);
    expect((await srv.rpc<any>('status')).mcp[0].state).toBe('ready');
    // The item is still open for a value that fits.
    await srv.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'accept', content: { word: 'aaaa' } });
    expect((await done()).response).toContain('{\\"action\\":\\"accept\\",\\"content\\":{\\"word\\":\\"aaaa\\"}}');
  }, 60_000);

  it('roots/list, on the call stream or the standalone one: the gateway has no roots and says so at once (-32601)', async () => {
    const srv = await start();
    for (const tool of ['roots', 'roots_unlinked']) {
      const { done } = await call(srv, `agent:main:${tool}`, tool);
      const text = toolResult((await done()).response).content[0].text as string;
      expect(text, tool).toMatch(/^error -32601 MCP error -32601: Method not found after \d+ ms$/);
      expect(Number(/after (\d+) ms/.exec(text)![1]), tool).toBeLessThan(1000);
    }
  });

  it("a JSON-RPC error for a tools/call is the tool's error (tool_error, the server's message, capped); a server that is down stays tool_unavailable", async () => {
    const srv = await start();
    const { done } = await call(srv, 'agent:main:rpc', 'rpc_error');
    // Before: {"code":"invalid_request", …}, as if the model's call were malformed.
    expect(toolResult((await done()).response)).toEqual({ status: 'error', error: { code: 'tool_error', message: `MCP h/rpc_error: MCP error -32603: ${RPC_ERROR_MESSAGE}` } });
    const long = toolResult((await (await call(srv, 'agent:main:rpc', 'rpc_error_long')).done()).response);
    expect(long.error.code).toBe('tool_error');
    expect(long.error.message).toMatch(new RegExp(`^MCP h/rpc_error_long: MCP error -32603: ${RPC_ERROR_MESSAGE}: x+$`));
    expect(long.error.message.length).toBe(4096);
    expect((await srv.rpc<any>('status')).mcp[0].state).toBe('ready');
    await mcp!.close();
    mcp = undefined;
    expect(toolResult((await (await call(srv, 'agent:main:rpc', 'rpc_error')).done()).response).error.code).toBe('tool_unavailable');
  });
});
