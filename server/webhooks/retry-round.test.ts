// deliveries.retry of a dead webhook is a fresh round of webhooks.maxAttempts whatever its stored count, also after
// maxAttempts changed (a restart with another config). SQLite's outbox and PostgreSQL's job engine alike.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, it } from 'vitest';
import { startTestServer, type TestServer, tmpDataDir, until } from '../testing/harness';

it('a dead webhook retried after webhooks.maxAttempts went from 2 to 3 gets 3 POSTs, not 1', async () => {
  let hits = 0;
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hits++;
      res.writeHead(500).end();
    });
  });
  await new Promise<void>((ok) => receiver.listen(0, '127.0.0.1', () => ok()));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const dataDir = tmpDataDir();
  const config = (maxAttempts: number) => ({ webhooks: { allowPrivateNetwork: true, retryBaseMs: 20, maxAttempts, timeoutMs: 2000 } });
  const key = 'agent:main:retry-round';
  const record = (s: TestServer, attempts: number) =>
    until(async () => {
      const [d] = (await s.rpc<{ deliveries: any[] }>('deliveries.list', { sessionKey: key, kind: 'webhook' })).deliveries;
      return d?.state === 'dead' && d.attempts >= attempts ? d : null;
    }, 60_000);
  let s = await startTestServer({ dataDir, config: config(2) });
  try {
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply done', webhook: { url } });
    await s.rpc('agent.wait', { runId });
    const dead = await record(s, 2);
    expect(dead.attempts).toBe(2);
    expect(hits).toBe(2);
    await s.close();
    s = await startTestServer({ dataDir, config: config(3) });
    await s.rpc('deliveries.retry', { deliveryId: dead.deliveryId });
    // Before (SQLite): the round's attempt number was the count modulo maxAttempts (2 % 3 + 1 = 3, the last): 1 POST.
    // Dead again once its round is over: after 3 more attempts.
    expect(await record(s, 3)).toMatchObject({ state: 'dead', attempts: 5 });
    await new Promise((r) => setTimeout(r, 300));
    expect(hits).toBe(5);
    expect((await s.rpc<{ webhooks: any[] }>('webhooks.list', {})).webhooks.find((w) => w.runId === runId)).toMatchObject({ status: 'dead', attempts: 5 });
  } finally {
    await s.close();
    receiver.closeAllConnections();
    receiver.close();
  }
}, 120_000);
