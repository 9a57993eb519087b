// /mcp on several processes (PostgreSQL): a client's notifications/cancelled that a load balancer sends to another
// process than its call's still cancels the call (CONTRACT §10: /mcp is stateless, any process answers).
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, until } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';

const post = (url: string, body: unknown) =>
  fetch(`${url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TEST_TOKEN}` }, body: JSON.stringify(body) });

describe('/mcp cancels across processes (PostgreSQL)', () => {
  it('a cancel that reaches another process than the call stops the sync crosstalk_send waiting there', async () => {
    const schema = `t_mc_${crypto.randomBytes(4).toString('hex')}`;
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema });
    try {
      const key = 'agent:main:mcp-cancel-elsewhere';
      // B has served /mcp before (as a process behind a load balancer has), A holds the call.
      await (await post(b.url, { jsonrpc: '2.0', id: 0, method: 'ping' })).text();
      const answered = post(a.url, { jsonrpc: '2.0', id: 'call-elsewhere', method: 'tools/call', params: { name: 'crosstalk_send', arguments: { sessionKey: key, message: '/sleep 6000\n/reply finished anyway', timeoutSeconds: 60 } } }).then((r) => r.text());
      const runId = await until(() => a.rt.store.activeRunOf(key));
      expect((await post(b.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'call-elsewhere', reason: 'no longer needed' } })).status).toBe(202);
      const text = await answered;
      // The call let go while the target still ran (before: A never heard of the cancel and answered after 6 s).
      expect(await a.rpc('agent.wait', { runId, timeoutMs: 0 })).toMatchObject({ status: 'timeout' });
      expect(text).not.toContain('finished anyway');
      expect(await a.rpc('agent.wait', { runId, timeoutMs: 15_000 })).toMatchObject({ status: 'ok', response: 'finished anyway' });
    } finally {
      await a.close();
      await b.close();
    }
  }, 60_000);
});
