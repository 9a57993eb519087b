// An elicitation item lives no longer than the MCP call that raised it: when the call is over however it ended (the
// server's request timed out and its cancellation never came), the item is cancelled, not left pending.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
import type { McpCallInfo } from './call-info';
import { Elicitations } from './elicitation';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

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
});
