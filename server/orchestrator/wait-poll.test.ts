// agent.wait on PostgreSQL (several processes): a run's end is polled once for all its waits, not once per wait.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { onPostgresPass } from '../testing/store-under-test';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

describe.runIf(onPostgresPass())('agent.wait polling', () => {
  it('many waits on a run pending approval read the store a few times, not once a second each', async () => {
    const key = 'agent:main:wait-poll';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/tool exec {"command":"echo waited"}' });
    const approval = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals[0]);
    const reads = vi.spyOn(s.rt.store, 'getRun');
    try {
      // 50 waits of 3 s each on a run driven by this process. Before: 50 polls, ~150 reads of the run.
      const waits = Array.from({ length: 50 }, () => s.rpc<{ status: string }>('agent.wait', { runId, timeoutMs: 3_000 }));
      await until(() => s.rt.orchestrator.pollsNow().get(runId) === 50);
      expect([...s.rt.orchestrator.pollsNow().keys()]).toEqual([runId]);
      expect((await Promise.all(waits)).every((w) => w.status === 'timeout')).toBe(true);
      expect(reads.mock.calls.filter(([id]) => id === runId).length).toBeLessThan(60);
      expect(s.rt.orchestrator.pollsNow().size).toBe(0);
      // And the run's end still answers a wait.
      const ended = s.rpc<{ status: string }>('agent.wait', { runId, timeoutMs: 20_000 });
      await s.rpc('approvals.resolve', { approvalId: approval.approvalId, decision: 'allow_once' });
      expect(await ended).toMatchObject({ status: 'ok' });
    } finally {
      reads.mockRestore();
    }
  });
});
