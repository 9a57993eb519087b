// The "resolved" push (CONTRACT §7 "Notifications"): once a pushed item is no longer pending, however it ended, each
// browser its push reached gets `{type: "resolved", …}`, after the item's push and once, through the loopback push
// service that decrypts every push (server/testing/push-receiver.ts); nothing for a browser the item never reached;
// retried, retried when dead, and sent after a restart. On both stores (TEST_STORE=postgres).
import { pendingItem } from '../testing/pending-item';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, tmpDataDir, until } from '../testing/harness';
import { type FakeBrowser, startPushReceiver, type PushReceiver } from '../testing/push-receiver';
import { pushDeliveryId, resolvedDeliveryId, topicOf } from './resolved';

const webhooks = { allowPrivateNetwork: true, retryBaseMs: 30, maxAttempts: 4, timeoutMs: 10_000 };
const agents = [{ id: 'main', tools: { sessions_list: 'ask' } }];

type Pushed = { type: string; approvalId: string; token?: string; decision?: string; decidedBy?: unknown };

let s: TestServer;
let rcv: PushReceiver;

beforeAll(async () => {
  s = await startTestServer({ config: { webhooks, agents } });
  const key = (await s.rpc<{ publicKey: string }>('push.vapidKey')).publicKey;
  rcv = await startPushReceiver(() => key);
});
afterAll(async () => {
  await s?.close();
  await rcv?.close();
});

/** What one browser was pushed about one item, in the order its push service got it. */
const pushesOf = (r: PushReceiver, browser: string, approvalId: string) => r.received.filter((x) => x.browser === browser && (x.json as Pushed).approvalId === approvalId).map((x) => x.json as Pushed);

const subscribe = async (t: TestServer, b: FakeBrowser) => t.rpc('push.subscribe', { subscription: b.subscription });
const unsubscribe = async (t: TestServer, ...bs: FakeBrowser[]) => {
  for (const b of bs) await t.rpc('push.unsubscribe', { endpoint: b.subscription.endpoint });
};

/** Every push and reconcile this server has started is done (so a repeat would have been sent by now). */
async function settle(t: TestServer): Promise<void> {
  await t.rt.push.idle();
  await (t.rt.push as unknown as { resolved: { reconcile(): Promise<void> } }).resolved.reconcile();
  await t.rt.push.idle();
}

type DeliveryInfo = { kind: string; state: string; attempts: number; to: { url: string }; error?: { code: string } };
/** A delivery as deliveries.get answers it; null while it is not recorded yet. */
const delivery = async (t: TestServer, deliveryId: string): Promise<DeliveryInfo | null> => {
  const r = await t.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'deliveries.get', params: { deliveryId } });
  return (r.body.result as DeliveryInfo | undefined) ?? null;
};
/** Waits until a delivery is recorded and `ended` says it is where the test wants it. */
const deliveryWhen = (t: TestServer, deliveryId: string, ended: (d: DeliveryInfo) => boolean, ms?: number) =>
  until(async () => {
    const d = await delivery(t, deliveryId);
    return d && ended(d) ? d : null;
  }, ms);

const action = (t: TestServer, body: unknown) => fetch(`${t.url}/api/push/action`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.status);

describe('a resolved push follows the item’s push to each browser it reached', () => {
  const ways: Array<{ how: string; decide: (t: TestServer, item: { approvalId: string; runId: string; session: string; token: string }) => Promise<unknown>; says: Partial<Pushed> }> = [
    { how: 'approvals.resolve', decide: (t, i) => t.rpc('approvals.resolve', { approvalId: i.approvalId, decision: 'deny' }), says: { decision: 'deny', decidedBy: { type: 'user', id: 'jsonrpc' } } },
    { how: 'allow_always (a rule from now on)', decide: (t, i) => t.rpc('approvals.resolve', { approvalId: i.approvalId, decision: 'allow_always' }), says: { decision: 'allow_always', decidedBy: { type: 'user', id: 'jsonrpc' } } },
    { how: 'a notification’s action', decide: async (t, i) => expect(await action(t, { approvalId: i.approvalId, token: i.token, decision: 'allow_once' })).toBe(200), says: { decision: 'allow_once', decidedBy: { type: 'push' } } },
    {
      how: 'a chat decision',
      decide: (t, i) => t.rt.orchestrator.approvals.resolve(i.approvalId, 'deny', 'not now', { type: 'chat', id: 'telegram:4242', channel: 'telegram' }),
      says: { decision: 'deny', decidedBy: { type: 'chat', id: 'telegram:4242' } },
    },
    { how: 'agent.cancel (the run ended)', decide: (t, i) => t.rpc('agent.cancel', { runId: i.runId }), says: { decision: 'cancel' } },
    { how: 'sessions.delete', decide: (t, i) => t.rpc('sessions.delete', { sessionKey: i.session }), says: { decision: 'cancel' } },
  ];

  it.each(ways)('decided by $how: after the item’s push, once, to every browser that got it, never to one that did not', async ({ how, decide, says }) => {
    const tag = how.replace(/[^a-z]+/gi, '-');
    const a = rcv.browser(`a-${tag}`);
    const b = rcv.browser(`b-${tag}`);
    const later = rcv.browser(`later-${tag}`);
    await subscribe(s, a);
    await subscribe(s, b);
    const session = `agent:main:resolved-${tag.toLowerCase()}`;
    const item = await pendingItem(s, session);
    const first = await until(() => (pushesOf(rcv, a.id, item.approvalId).length && pushesOf(rcv, b.id, item.approvalId).length ? pushesOf(rcv, a.id, item.approvalId)[0] : null));
    // Subscribed after the item was pushed: never sent it, so never told it was decided.
    await subscribe(s, later);
    await decide(s, { ...item, session, token: first.token! });
    for (const br of [a, b]) {
      const got = await until(() => (pushesOf(rcv, br.id, item.approvalId).length >= 2 ? pushesOf(rcv, br.id, item.approvalId) : null));
      expect(got.map((p) => p.type)).toEqual(['approval', 'resolved']);
      expect(got[1]).toEqual({ type: 'resolved', approvalId: item.approvalId, ...says });
    }
    await settle(s);
    // Once each: the event, the item push's delivery and the reconcile all found it, and only one of them sent it.
    for (const br of [a, b]) expect(pushesOf(rcv, br.id, item.approvalId).map((p) => p.type)).toEqual(['approval', 'resolved']);
    expect(rcv.received.filter((x) => x.browser === later.id)).toEqual([]);
    expect(rcv.rejected).toEqual([]);
    // Its own delivery of kind push (CONTRACT §9), delivered; the same Topic as the item's push (RFC 8030 §5.4).
    const d = await delivery(s, resolvedDeliveryId(item.approvalId, a.subscription.endpoint));
    expect(d).toMatchObject({ kind: 'push', state: 'delivered', attempts: 1, to: { url: a.subscription.endpoint } });
    const topics = rcv.received.filter((x) => x.browser === a.id && (x.json as Pushed).approvalId === item.approvalId).map((x) => x.headers.topic);
    expect(topics).toEqual([topicOf(item.approvalId), topicOf(item.approvalId)]);
    await unsubscribe(s, a, b, later);
  });

  it('a call the rule decides without asking is never pushed, so no resolved push either', async () => {
    const a = rcv.browser('rule-a');
    await subscribe(s, a);
    const session = 'agent:main:resolved-rule';
    const item = await pendingItem(s, session);
    await until(() => pushesOf(rcv, a.id, item.approvalId).length === 1 || null);
    await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'allow_always' });
    await s.rpc('agent.wait', { runId: item.runId });
    // The same tool again: allowed by the rule (decidedBy rule), never pending.
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: session, message: '/tool sessions_list {}' });
    expect(await s.rpc('agent.wait', { runId })).toMatchObject({ status: 'ok' });
    await settle(s);
    const { approvals } = await s.rpc<{ approvals: Array<{ approvalId: string; decidedBy: { type: string } }> }>('approvals.history', { sessionKey: session });
    const byRule = approvals.find((x) => x.decidedBy.type === 'rule')!;
    expect(byRule).toBeDefined();
    expect(rcv.received.filter((x) => (x.json as Pushed).approvalId === byRule.approvalId)).toEqual([]);
    expect(pushesOf(rcv, a.id, item.approvalId).map((p) => p.type)).toEqual(['approval', 'resolved']);
    await unsubscribe(s, a);
  });

  it('a browser whose push was still retrying when the item was decided gets nothing more: that retry ends it failed', async () => {
    const ok = rcv.browser('retrying-ok');
    const failing = rcv.browser('retrying-failing');
    await subscribe(s, ok);
    await subscribe(s, failing);
    rcv.answer(failing.id, 500, 500, 500);
    const item = await pendingItem(s, 'agent:main:resolved-retrying');
    await until(() => pushesOf(rcv, ok.id, item.approvalId).length === 1 || null);
    await until(() => rcv.attempts.some((x) => x.browser === failing.id) || null);
    await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'deny' });
    await until(() => pushesOf(rcv, ok.id, item.approvalId).length === 2 || null);
    const ended = await deliveryWhen(s, pushDeliveryId(item.approvalId, failing.subscription.endpoint), (d) => d.state !== 'accepted');
    expect(ended).toMatchObject({ state: 'failed', error: { code: 'already_resolved' } });
    await settle(s);
    expect(rcv.received.filter((x) => x.browser === failing.id)).toEqual([]);
    const none = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'deliveries.get', params: { deliveryId: resolvedDeliveryId(item.approvalId, failing.subscription.endpoint) } });
    expect(none.body.error).toMatchObject({ data: { code: 'unknown_delivery' } });
    await unsubscribe(s, ok, failing);
  });

  it('an item decided while its push was on the wire: the resolved push follows once that push is answered 201', async () => {
    const slow = rcv.browser('on-the-wire');
    await subscribe(s, slow);
    const wire = rcv.hold(slow.id);
    const item = await pendingItem(s, 'agent:main:resolved-wire');
    // The item's push is at the push service, unanswered; the item is decided now, and the decision's event finds its
    // delivery still `accepted`: nothing to tell yet.
    const resolved = (s.rt.push as unknown as { resolved: { after(id: string, endpoints?: string[]): Promise<void> } }).resolved;
    const after = resolved.after.bind(resolved);
    const looked: string[] = [];
    resolved.after = async (id, endpoints) => {
      await after(id, endpoints);
      if (id === item.approvalId) looked.push(endpoints ? 'delivered' : 'decided');
    };
    try {
      await wire.reached;
      await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'deny' });
      await until(() => looked.includes('decided') || null);
      expect(pushesOf(rcv, slow.id, item.approvalId)).toEqual([]);
      wire.release();
      await until(() => looked.includes('delivered') || null);
    } finally {
      resolved.after = after;
    }
    const got = await until(() => (pushesOf(rcv, slow.id, item.approvalId).length >= 2 ? pushesOf(rcv, slow.id, item.approvalId) : null));
    expect(got.map((p) => p.type)).toEqual(['approval', 'resolved']);
    await settle(s);
    expect(pushesOf(rcv, slow.id, item.approvalId)).toHaveLength(2);
    await unsubscribe(s, slow);
  });
});

describe('a resolved push is retried as the item’s push is, and never carries a token', () => {
  it('answered 5xx it is tried again; run out of attempts it is dead, and deliveries.retry sends it again', async () => {
    const flaky = rcv.browser('resolved-flaky');
    const down = rcv.browser('resolved-down');
    await subscribe(s, flaky);
    await subscribe(s, down);
    const item = await pendingItem(s, 'agent:main:resolved-retry');
    await until(() => (pushesOf(rcv, flaky.id, item.approvalId).length && pushesOf(rcv, down.id, item.approvalId).length) || null);
    rcv.answer(flaky.id, 503, 500);
    rcv.answer(down.id, 500, 502, 503, 504); // webhooks.maxAttempts is 4
    await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'deny' });

    const flakyId = resolvedDeliveryId(item.approvalId, flaky.subscription.endpoint);
    const done = await deliveryWhen(s, flakyId, (d) => d.state !== 'accepted');
    expect(done).toMatchObject({ kind: 'push', state: 'delivered', attempts: 3 });
    expect(pushesOf(rcv, flaky.id, item.approvalId).map((p) => p.type)).toEqual(['approval', 'resolved']);

    const downId = resolvedDeliveryId(item.approvalId, down.subscription.endpoint);
    const dead = await deliveryWhen(s, downId, (d) => d.state === 'dead');
    expect(dead).toMatchObject({ attempts: 4, error: { code: 'channel_error' } });
    // Its item is decided, as a resolved push's always is: the retry is not refused for that.
    expect(await s.rpc('deliveries.retry', { deliveryId: downId })).toEqual({ status: 'ok' });
    const again = await deliveryWhen(s, downId, (d) => d.state === 'delivered');
    expect(again.attempts).toBe(5);
    const got = pushesOf(rcv, down.id, item.approvalId);
    expect(got).toEqual([expect.objectContaining({ type: 'approval' }), { type: 'resolved', approvalId: item.approvalId, decision: 'deny', decidedBy: { type: 'user', id: 'jsonrpc' } }]);
    // A resolved push never carries an action token.
    for (const p of [...pushesOf(rcv, flaky.id, item.approvalId), ...got].filter((x) => x.type === 'resolved')) expect(p).not.toHaveProperty('token');
    await unsubscribe(s, flaky, down);
  });
});

describe('resolved pushes survive a restart', () => {
  it('one answered 503 before a crash is sent once by the restarted server; a decision whose pushes a crash lost is reconciled', async () => {
    const slow = { ...webhooks, retryBaseMs: 3000 };
    const dataDir = tmpDataDir();
    let first: TestServer | null = await startTestServer({ dataDir, config: { webhooks: slow, agents } });
    const key = (await first.rpc<{ publicKey: string }>('push.vapidKey')).publicKey;
    const own = await startPushReceiver(() => key);
    let second: TestServer | null = null;
    try {
      const br = own.browser('restart');
      await subscribe(first, br);
      const one = await pendingItem(first, 'agent:main:resolved-restart-one');
      const two = await pendingItem(first, 'agent:main:resolved-restart-two');
      await until(() => (pushesOf(own, br.id, one.approvalId).length && pushesOf(own, br.id, two.approvalId).length) || null);
      // One: its resolved push is answered 503, and the server dies before the retry.
      own.answer(br.id, 503);
      await first.rpc('approvals.resolve', { approvalId: one.approvalId, decision: 'deny' });
      await until(async () => Number((await first!.rt.store.db.selectFrom('deliveries').select('attempts').where('id', '=', resolvedDeliveryId(one.approvalId, br.subscription.endpoint)).executeTakeFirst())?.attempts ?? 0) === 1 || null);
      // Two: decided in the store with no event heard (the process died right after the decision's commit).
      await first.rt.store.settleApproval(two.approvalId, 'denied', 'deny', null, undefined, { type: 'user', id: 'jsonrpc' });
      await first.crash();
      first = null;
      expect(pushesOf(own, br.id, one.approvalId).map((p) => p.type)).toEqual(['approval']);
      expect(pushesOf(own, br.id, two.approvalId).map((p) => p.type)).toEqual(['approval']);

      second = await startTestServer({ dataDir, config: { webhooks: slow, agents } });
      const done = await deliveryWhen(second, resolvedDeliveryId(one.approvalId, br.subscription.endpoint), (d) => d.state !== 'accepted', 30_000);
      expect(done).toMatchObject({ state: 'delivered', attempts: 2 });
      await until(() => pushesOf(own, br.id, two.approvalId).length === 2 || null, 30_000);
      await settle(second);
      expect(pushesOf(own, br.id, one.approvalId)).toEqual([expect.objectContaining({ type: 'approval' }), { type: 'resolved', approvalId: one.approvalId, decision: 'deny', decidedBy: { type: 'user', id: 'jsonrpc' } }]);
      expect(pushesOf(own, br.id, two.approvalId)).toEqual([expect.objectContaining({ type: 'approval' }), { type: 'resolved', approvalId: two.approvalId, decision: 'deny', decidedBy: { type: 'user', id: 'jsonrpc' } }]);
      expect(own.rejected).toEqual([]);
    } finally {
      await first?.crash();
      await second?.close();
      await own.close();
    }
  }, 90_000);
});
