// A channel send whose record was settled elsewhere while its call was out (the key's repeat on another process
// delivered it, or this process was found dead and the sweep closed it) neither retries nor mirrors (CONTRACT §9).
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';

/** The platform: each request is held until the test answers it with a status. */
let platform: http.Server;
const held: Array<{ body: string; answer(status: number): void }> = [];
let s: TestServer;

beforeAll(async () => {
  platform = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => held.push({ body, answer: (status) => res.writeHead(status, { 'content-type': 'application/json' }).end('{}') }));
  });
  await new Promise<void>((r) => platform.listen(0, '127.0.0.1', r));
  const port = (platform.address() as { port: number }).port;
  s = await startTestServer({ config: { channels: { webhook: { url: `http://127.0.0.1:${port}/out`, dmPolicy: 'open', retryBaseMs: 50, maxAttempts: 3 } } } });
});
afterAll(async () => {
  await s?.close();
  platform?.closeAllConnections();
  platform?.close();
});

const lastDelivery = async () => (await s.rpc<{ deliveries: any[] }>('deliveries.list', { kind: 'channel', limit: 1 })).deliveries[0];
const closeIt = (id: string) => s.rt.store.advanceDeliveries([id], 'failed', { error: { code: 'interrupted', message: 'closed by the sweep (test)' } });

describe('a channel send settled elsewhere while its call was out', () => {
  it('is not mirrored when its call comes back 2xx: the record keeps what was decided elsewhere', async () => {
    held.length = 0;
    const sending = s.rpc<{ messageId: string; sessionKey: string }>('send', { channel: 'webhook', to: 'peer-a', message: 'first' });
    await until(() => held.length === 1);
    const d = await lastDelivery();
    expect(d.state).toBe('accepted');
    await closeIt(d.deliveryId);
    held[0]!.answer(200);
    const r = await sending;
    expect(r.messageId).toBeTruthy();
    const rows = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'chat.history', params: { sessionKey: r.sessionKey } });
    expect(rows.body.result?.messages ?? []).toEqual([]); // no mirror row (the session was never made)
    expect(await s.rpc('deliveries.get', { deliveryId: d.deliveryId })).toMatchObject({ state: 'failed', error: { code: 'interrupted' } });
  });

  it('does not retry once its record was settled elsewhere: the platform gets it once', async () => {
    held.length = 0;
    const sending = s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'send', params: { channel: 'webhook', to: 'peer-b', message: 'second' } });
    await until(() => held.length === 1);
    const d = await lastDelivery();
    await closeIt(d.deliveryId);
    held[0]!.answer(503); // worth retrying: before, the next attempt went out 50 ms later
    const res = await sending;
    expect(res.body.error.data.code).toBe('channel_error');
    await new Promise((r) => setTimeout(r, 300));
    expect(held).toHaveLength(1);
    expect(await s.rpc('deliveries.get', { deliveryId: d.deliveryId })).toMatchObject({ state: 'failed', error: { code: 'interrupted' } });
  });
});
