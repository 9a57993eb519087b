// An approval decided while its run stops waiting (the run cancelled during the decision's delivery) answers the
// caller ok: found by the 200-fault run (approvals.resolve answered `internal`, "emit for unregistered run").
import { afterEach, describe, expect, it } from 'vitest';
import { settledEvents, startTestServer, type TestServer, until } from '../testing/harness';

let s: TestServer | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

describe('approvals.resolve racing the run’s end', () => {
  it('a run cancelled while its decision is being delivered: resolve answers ok, the run ends once, nothing after its end', async () => {
    s = await startTestServer();
    const server = s;
    const { runId } = await server.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:race', message: '/tool exec {"command":"echo never"}' });
    const p = await until(async () => (await server.rpc<{ approvals: Array<{ approvalId: string }> }>('approvals.list', {})).approvals[0]);
    // The delivery's look at the lease is where the run goes away: cancelled, ended, gone from the bus.
    const store = server.rt.store;
    const holdsLease = store.holdsLease.bind(store);
    store.holdsLease = async (key: string) => {
      store.holdsLease = holdsLease;
      await server.rpc('agent.cancel', { runId });
      await server.rpc('agent.wait', { runId });
      return holdsLease(key);
    };
    await expect(server.rpc('approvals.resolve', { approvalId: p.approvalId, decision: 'allow_once' })).resolves.toBeDefined();
    expect(await server.rpc('agent.wait', { runId })).toMatchObject({ status: 'error', error: 'cancelled' });
    // The stored decision is the person's; the run's log ends with its one end (`error`: cancelled), nothing said after it.
    expect((await server.rt.store.getApproval(p.approvalId))?.status).toBe('allowed');
    const events = (await settledEvents(server.rt, { runId })).map((e) => ({ stream: e.stream, data: JSON.parse(e.data) as { phase?: string } }));
    const ends = events.filter((e) => e.stream === 'lifecycle' && (e.data.phase === 'end' || e.data.phase === 'error'));
    expect(ends).toHaveLength(1);
    expect(events.at(-1)).toBe(ends[0]);
  });
});
