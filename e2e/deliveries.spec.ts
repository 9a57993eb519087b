// Deliveries in the room (CONTRACT §7, §9): a tool card shows its delivery's state live, the row the target got links
// back to the sender's call, and a dead webhook delivery is retried from the board's "Failed" group.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, openOwnRoom, test, TOKEN } from './fixtures';

const rpcAt = async <T = any>(origin: string, method: string, params: object): Promise<T> => {
  const res = await fetch(`${origin}/api/gateway`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const body = await res.json();
  expect(body.error, JSON.stringify(body.error)).toBeUndefined();
  return body.result as T;
};

test('a tool card shows its delivery state live; a dead webhook delivery is retried from the room', async ({ page, freshSession, ownServer }) => {
  test.setTimeout(180_000);
  // A webhook receiver that refuses until the test lets it answer 2xx.
  let status = 500;
  let hits = 0;
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hits++;
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((ok) => receiver.listen(0, '127.0.0.1', () => ok()));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  try {
    const server = await ownServer({ config: { agents: [{ id: 'main' }, { id: 'researcher' }], webhooks: { allowPrivateNetwork: true, retryBaseMs: 50, maxAttempts: 2, timeoutMs: 2000 } } });
    const room = await openOwnRoom(page, server, freshSession);

    // An async send whose target takes a while: its card goes on from the call's end to `answered`, live.
    const target = `agent:researcher:${freshSession.split(':').pop()}-t`;
    await room.send(`/tool sessions_send ${JSON.stringify({ sessionKey: target, message: '/sleep 3000\n/reply 42', mode: 'async' })}`);
    const card = page.locator('[data-testid="tool-card"][data-tool="sessions_send"]').first();
    await expect(card.getByTestId('delivery-state')).toHaveText(/^(accepted|delivered|running)$/, { timeout: 30_000 });
    await expect(card.getByTestId('delivery-state')).toHaveText('running', { timeout: 30_000 });
    await expect(card.getByTestId('delivery-state')).toHaveText('answered', { timeout: 30_000 });
    await room.snap('delivery-answered');

    // The row the target got links back to the call that sent it.
    await page.goto(`${server.origin}/?session=${encodeURIComponent(target)}`);
    await expect(room.sessionTitle).toHaveText(target);
    const link = page.getByTestId('call-link').first();
    await expect(link).toBeVisible();
    await link.click();
    await expect(room.sessionTitle).toHaveText(freshSession);
    await expect(page.locator('[data-testid="tool-card"][data-tool="sessions_send"]').first()).toHaveAttribute('open', '');

    // A run with a webhook the receiver refuses: after the configured attempts its delivery is dead, on the board.
    const { runId } = await rpcAt<{ runId: string }>(server.origin, 'agent', { sessionKey: `${freshSession}-hook`, message: '/reply done', webhook: { url: hookUrl } });
    await expect
      .poll(async () => (await rpcAt<{ deliveries: Array<{ state: string }> }>(server.origin, 'deliveries.list', { kind: 'webhook', sessionKey: `${freshSession}-hook` })).deliveries[0]?.state, { timeout: 60_000 })
      .toBe('dead');
    const [dead] = (await rpcAt<{ deliveries: Array<{ deliveryId: string; attempts: number }> }>(server.origin, 'deliveries.list', { kind: 'webhook', state: 'dead' })).deliveries;
    expect(dead!.attempts).toBe(2);
    await page.getByRole('button', { name: 'Board', exact: true }).click();
    const failed = page.getByRole('region', { name: 'Agent board' }).getByRole('region', { name: 'Failed', exact: true });
    const item = failed.locator(`[data-testid="board-delivery"][data-delivery-id="${dead!.deliveryId}"]`);
    await expect(item).toBeVisible({ timeout: 20_000 });
    await expect(item).toContainText('webhook');
    await expect(item.getByTestId('delivery-state')).toHaveText('dead');
    await room.snap('delivery-dead');

    // The receiver is back: Retry attempts it again under the same id, and it is delivered.
    status = 200;
    const before = hits;
    await item.getByRole('button', { name: 'Retry' }).click();
    await expect(item).toHaveCount(0, { timeout: 20_000 });
    await expect.poll(async () => (await rpcAt<{ state: string }>(server.origin, 'deliveries.get', { deliveryId: dead!.deliveryId })).state, { timeout: 30_000 }).toBe('delivered');
    expect(hits).toBe(before + 1);
    expect((await rpcAt<{ runId: string }>(server.origin, 'deliveries.get', { deliveryId: dead!.deliveryId })).runId).toBe(runId);
  } finally {
    await new Promise<void>((ok) => (receiver.closeAllConnections(), receiver.close(() => ok())));
  }
});
