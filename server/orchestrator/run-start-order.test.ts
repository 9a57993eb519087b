// A message that starts a run is answered before the run's first step is prepared (run-queues.ts `execute`): the
// client's next request (agent.wait) travels while the run works, instead of after it (issue 24.4).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness';

describe('a run starts in a task of its own', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  }, 120_000);
  afterAll(() => s?.close());

  it("answers `agent` before the run reads its context, and the run still ends once with its answer", async () => {
    const order: string[] = [];
    const store = s.rt.store as unknown as { contextRows: (...a: unknown[]) => Promise<unknown> };
    const contextRows = store.contextRows.bind(store);
    store.contextRows = (...a: unknown[]) => {
      order.push('context read');
      return contextRows(...a);
    };
    try {
      for (const key of ['agent:main:order-new', 'agent:main:order-new']) {
        order.length = 0;
        const r = await s.rt.gateway.agent({ sessionKey: key, message: 'hello order' });
        order.push('answered');
        const w = (await s.rt.gateway.agentWait({ runId: r.runId, timeoutMs: 10_000 })) as { status: string; response?: string };
        expect(w.status).toBe('ok');
        expect(w.response).toBe('echo: hello order');
        expect(order).toEqual(['answered', 'context read']);
      }
    } finally {
      store.contextRows = contextRows;
    }
  });
});
