// approvals.resolve for a run whose gate still waits here but which has left the event bus (dropped when another
// call of it lost the database, issue 20's fault load): the decision is stored and answered, not `internal`
// ("emit for unregistered run"); it goes where the run is driven now.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ config: { agents: [{ id: 'main', tools: { exec: 'ask' } }] } });
});
afterAll(async () => {
  await s?.close();
});

it('a decision for a run gone from the bus while its gate waits is stored and answered ok', async () => {
  const key = 'agent:main:gone-gate';
  const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/tool exec {"command": "echo hi"}' });
  const p = await until(async () => (await s.rpc<{ approvals: Array<{ approvalId: string }> }>('approvals.list', { sessionKey: key })).approvals[0]);
  s.rt.bus.unregisterRun(runId); // the run's copy here is dropped; its gate's waiter is still registered
  const r = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'approvals.resolve', params: { approvalId: p.approvalId, decision: 'deny', reason: 'no' } });
  expect(r.body.error).toBeUndefined();
  expect((await s.rt.store.getApproval(p.approvalId))?.status).toBe('denied');
});
