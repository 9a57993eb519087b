// deliveries.retry of a dead push is a fresh round of webhooks.maxAttempts whatever its stored count, also after
// maxAttempts changed (a restart with another config). On both stores.
import { expect, it } from 'vitest';
import { startTestServer, type TestServer, tmpDataDir, until } from '../testing/harness';
import { pendingItem } from '../testing/pending-item';
import { startPushReceiver } from '../testing/push-receiver';

const agents = [{ id: 'main', tools: { sessions_list: 'ask' } }];
const config = (maxAttempts: number) => ({ agents, webhooks: { allowPrivateNetwork: true, retryBaseMs: 30, maxAttempts, timeoutMs: 2000 } });

it('a dead push retried after webhooks.maxAttempts went from 2 to 3 gets 3 attempts, not 1', async () => {
  const dataDir = tmpDataDir();
  let s: TestServer = await startTestServer({ dataDir, config: config(2) });
  const key = (await s.rpc<{ publicKey: string }>('push.vapidKey')).publicKey;
  const rcv = await startPushReceiver(() => key);
  try {
    const br = rcv.browser('rounds');
    await s.rpc('push.subscribe', { subscription: br.subscription });
    rcv.answer('rounds', 500, 500);
    const { approvalId } = await pendingItem(s, 'agent:main:push-rounds');
    const record = async (attempts: number) =>
      until(async () => {
        const row = await s.rt.store.getApproval(approvalId);
        const { deliveries } = await s.rpc<{ deliveries: any[] }>('deliveries.list', { kind: 'push', sessionKey: row!.session_key });
        return deliveries.find((d) => d.state === 'dead' && d.attempts >= attempts);
      }, 30_000);
    const dead = await record(2);
    expect(dead.attempts).toBe(2);
    await s.close();
    s = await startTestServer({ dataDir, config: config(3) });
    rcv.answer('rounds', 500, 500, 500);
    await s.rpc('deliveries.retry', { deliveryId: dead.deliveryId });
    // Before: the round's attempt number was the count modulo maxAttempts (2 % 3 + 1 = 3, the last): 1 attempt.
    // Dead again once its round is over: after 3 more attempts.
    expect(await record(3)).toMatchObject({ deliveryId: dead.deliveryId, state: 'dead', attempts: 5 });
    await new Promise((r) => setTimeout(r, 300));
    expect(rcv.attempts.filter((a) => a.browser === 'rounds').map((a) => a.status)).toEqual([500, 500, 500, 500, 500]);
  } finally {
    await s.close();
    await rcv.close();
  }
}, 90_000);
