// Web Push against a real push service on 127.0.0.1 (server/testing/push-receiver.ts) that checks the VAPID JWT and
// decrypts each body with the subscription's private key by itself: delivery, 404/410 drops, 5xx retries, the
// one-time action token, the SSRF refusal. On both stores (TEST_STORE=postgres).
import { pendingItem as pendingItemOf } from '../testing/pending-item';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, tmpDataDir, until } from '../testing/harness';
import { startPushReceiver, type PushReceiver } from '../testing/push-receiver';
import webpush from 'web-push';
import { loadVapidKeys } from './keys';
import { approvalPush } from './payload';
import { sweepRetention } from '../store/retention';
import { onPostgresPass } from '../testing/store-under-test';

const webhooks = { allowPrivateNetwork: true, retryBaseMs: 30, maxAttempts: 4, timeoutMs: 2000 };
const agents = [{ id: 'main', tools: { sessions_list: 'ask' } }];

let s: TestServer;
let rcv: PushReceiver;
let serverKey = '';

beforeAll(async () => {
  s = await startTestServer({ config: { webhooks, agents } });
  serverKey = (await s.rpc<{ publicKey: string }>('push.vapidKey')).publicKey;
  rcv = await startPushReceiver(() => serverKey);
});
afterAll(async () => {
  await s?.close();
  await rcv?.close();
});

/** A pending item's approval id (server/testing/pending-item.ts). */
const pendingItem = async (t: TestServer, session: string) => (await pendingItemOf(t, session)).approvalId;

const action = (t: TestServer, body: unknown) =>
  fetch(`${t.url}/api/push/action`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: await r.json() }));

type DeliveryInfo = { deliveryId: string; kind: string; state: string; attempts: number; from: { sessionKey?: string }; to: { url?: string }; error?: { code: string; message: string } };
/** The push deliveries of one pending item (its run's). */
const pushDeliveries = async (t: TestServer, approvalId: string): Promise<DeliveryInfo[]> => {
  const row = await t.rt.store.getApproval(approvalId);
  const { deliveries } = await t.rpc<{ deliveries: DeliveryInfo[] }>('deliveries.list', { kind: 'push', sessionKey: row!.session_key });
  return deliveries;
};

const subscriptions = async (t: TestServer) => (await t.rt.store.db.selectFrom('push_subscriptions').select('endpoint').execute()).map((r) => r.endpoint);

describe('push (CONTRACT §3 push.*, §7 Notifications)', () => {
  it('makes one VAPID key pair, kept in the store: concurrent first loads agree, and push.vapidKey answers it', async () => {
    expect(Buffer.from(serverKey, 'base64url')).toHaveLength(65);
    await s.rt.store.db.deleteFrom('push_keys').execute();
    const keys = await Promise.all(Array.from({ length: 6 }, () => loadVapidKeys(s.rt.store)));
    expect(new Set(keys.map((k) => k.publicKey)).size).toBe(1);
    // Put the first one back (the running service cached it).
    await s.rt.store.db.updateTable('push_keys').set({ public_key: serverKey, private_key: (s.rt.push as unknown as { keys: { privateKey: string } }).keys.privateKey }).execute();
    expect((await loadVapidKeys(s.rt.store)).publicKey).toBe(serverKey);
  });

  it('pushes a new pending item to every subscription: VAPID checked, aes128gcm decrypted, the §7 JSON', async () => {
    const a = rcv.browser('a');
    const b = rcv.browser('b');
    expect(await s.rpc('push.subscribe', { subscription: { ...a.subscription, expirationTime: null } })).toEqual({ status: 'ok' });
    expect(await s.rpc('push.subscribe', { subscription: b.subscription })).toEqual({ status: 'ok' });
    // The same browser again is one subscription.
    await s.rpc('push.subscribe', { subscription: b.subscription });
    expect((await subscriptions(s)).sort()).toEqual([a.subscription.endpoint, b.subscription.endpoint].sort());

    const approvalId = await pendingItem(s, 'agent:main:push-one');
    const got = await until(() => (rcv.received.filter((r) => (r.json as { approvalId: string }).approvalId === approvalId).length === 2 ? rcv.received.filter((r) => (r.json as { approvalId: string }).approvalId === approvalId) : null));
    expect(rcv.rejected).toEqual([]);
    for (const r of got) {
      const { token, ...rest } = r.json as { token: string };
      expect(rest).toEqual({ type: 'approval', approvalId, kind: 'tool', sessionKey: 'agent:main:push-one', tool: 'sessions_list', parentChain: ['agent:main:push-one'], summary: 'sessions_list {}' });
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(r.claims.aud).toBe(rcv.origin);
      expect(r.headers['content-encoding']).toBe('aes128gcm');
    }
    // Both browsers got the one token of that item.
    expect(new Set(got.map((r) => (r.json as { token: string }).token)).size).toBe(1);
    await s.rpc('approvals.resolve', { approvalId, decision: 'deny' });
  });

  it("a notification's token resolves its tool item once, recorded as decided by push, then stops working", async () => {
    await s.rpc('push.subscribe', { subscription: rcv.browser('act').subscription });
    const approvalId = await pendingItem(s, 'agent:main:push-act');
    const msg = await until(() => rcv.received.find((r) => (r.json as { approvalId: string }).approvalId === approvalId));
    const { token } = msg.json as { token: string };
    // A wrong token, or a right token for another approval, is forbidden, and decides nothing.
    expect(await action(s, { approvalId, token: token.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')), decision: 'allow_once' })).toMatchObject({ status: 403, body: { status: 'error', error: { code: 'forbidden' } } });
    expect(await action(s, { approvalId: 'apr_nope', token, decision: 'allow_once' })).toMatchObject({ status: 403 });
    expect(await action(s, { approvalId, token, decision: 'allow_always' })).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    expect((await s.rt.store.getApproval(approvalId))?.status).toBe('pending');

    expect(await action(s, { approvalId, token, decision: 'allow_once' })).toEqual({ status: 200, body: { status: 'ok' } });
    const row = await s.rt.store.getApproval(approvalId);
    expect(row).toMatchObject({ status: 'allowed', decision: 'allow_once' });
    const resolved = await until(async () => (await s.rt.store.db.selectFrom('events').select('data').where('stream', '=', 'approval').where('session_key', '=', 'agent:main:push-act').execute()).map((e) => JSON.parse(e.data)).find((d) => d.phase === 'resolved'));
    expect(resolved).toMatchObject({ approvalId, decision: 'allow_once', by: { type: 'push' } });
    // The record (CONTRACT §3 approvals.history) says a notification decided it.
    const { approvals } = await s.rpc<{ approvals: Array<{ approvalId: string; decision: string; decidedBy: unknown }> }>('approvals.history', { sessionKey: 'agent:main:push-act' });
    expect(approvals.find((a) => a.approvalId === approvalId)).toMatchObject({ decision: 'allow_once', decidedBy: { type: 'push' } });
    // Spent: the same token again (this notification pressed twice, or the same item's on another browser: every
    // subscription gets the item's token) decides nothing and says it was decided. Before: the token was deleted at
    // the decision, the press read as a wrong token (403 forbidden), and the notification said "Open crosstalk".
    const again = await action(s, { approvalId, token, decision: 'deny' });
    expect(again).toMatchObject({ status: 409, body: { error: { code: 'already_resolved' } } });
    expect((await s.rt.store.getApproval(approvalId))?.decision).toBe('allow_once');
  });

  it('a token pressed after its item was resolved anywhere else decides nothing and says it was already decided', async () => {
    await s.rpc('push.subscribe', { subscription: rcv.browser('elsewhere').subscription });
    const approvalId = await pendingItem(s, 'agent:main:push-elsewhere');
    const msg = await until(() => rcv.received.find((r) => (r.json as { approvalId: string }).approvalId === approvalId));
    await s.rpc('approvals.resolve', { approvalId, decision: 'deny' });
    const token = (msg.json as { token: string }).token;
    // Before: the token was deleted at the decision, and the press read as a wrong token (403 forbidden), so the
    // notification said "Open crosstalk to decide it" instead of "It was already decided" (public/sw.js).
    const late = await action(s, { approvalId, token, decision: 'allow_once' });
    expect(late.status).not.toBe(200);
    expect(late.body).toMatchObject({ error: { code: 'already_resolved' } });
    expect((await s.rt.store.getApproval(approvalId))?.status).toBe('denied');
    // Pressed again, it says the same (the token stays until the retention sweep), and a wrong token is still a wrong token.
    expect(await action(s, { approvalId, token, decision: 'deny' })).toMatchObject({ status: 409, body: { error: { code: 'already_resolved' } } });
    expect(await action(s, { approvalId, token: 'x'.repeat(token.length), decision: 'allow_once' })).toMatchObject({ status: 403, body: { error: { code: 'forbidden' } } });
  });

  it("the retention sweep deletes the tokens of items decided more than a day ago that nobody pressed, and keeps a pending item's", async () => {
    const ago = new Date(Date.now() - 2 * 86_400_000).toISOString();
    const pending = await pendingItem(s, 'agent:main:push-sweep');
    await s.rt.store.db.insertInto('push_tokens').values([
      { token_hash: 'h-decided', approval_id: 'apr_decided_long_ago', created_at: ago },
      { token_hash: 'h-pending', approval_id: pending, created_at: ago },
      { token_hash: 'h-fresh', approval_id: 'apr_decided_now', created_at: new Date().toISOString() },
    ]).execute();
    expect((await sweepRetention(s.rt.store)).pushTokens).toBeGreaterThanOrEqual(1);
    const left = (await s.rt.store.db.selectFrom('push_tokens').select('token_hash').where('token_hash', 'in', ['h-decided', 'h-pending', 'h-fresh']).execute()).map((r) => r.token_hash).sort();
    expect(left).toEqual(['h-fresh', 'h-pending']);
  });

  it('drops a subscription its push service answers 404 or 410', async () => {
    const g404 = rcv.browser('gone-404');
    const g410 = rcv.browser('gone-410');
    await s.rpc('push.subscribe', { subscription: g404.subscription });
    await s.rpc('push.subscribe', { subscription: g410.subscription });
    rcv.answer('gone-404', 404);
    rcv.answer('gone-410', 410);
    const approvalId = await pendingItem(s, 'agent:main:push-gone');
    await until(async () => {
      const subs = await subscriptions(s);
      return !subs.includes(g404.subscription.endpoint) && !subs.includes(g410.subscription.endpoint);
    });
    expect(rcv.attempts.filter((x) => x.browser.startsWith('gone-'))).toEqual(expect.arrayContaining([expect.objectContaining({ browser: 'gone-404', status: 404 }), expect.objectContaining({ browser: 'gone-410', status: 410 })]));
    expect(rcv.attempts.filter((x) => x.browser.startsWith('gone-'))).toHaveLength(2); // never retried
    const gone = (await pushDeliveries(s, approvalId)).filter((d) => d.to.url === g404.subscription.endpoint || d.to.url === g410.subscription.endpoint);
    expect(gone.map((d) => [d.state, d.attempts, d.error?.message.slice(0, 25)]).sort()).toEqual([
      ['dead', 1, 'push service answered 404'],
      ['dead', 1, 'push service answered 410'],
    ]);
    await s.rpc('approvals.resolve', { approvalId, decision: 'deny' });
  });

  it('retries a push its service answers 5xx, and keeps the subscription', async () => {
    const flaky = rcv.browser('flaky');
    await s.rpc('push.subscribe', { subscription: flaky.subscription });
    rcv.answer('flaky', 500, 503);
    const approvalId = await pendingItem(s, 'agent:main:push-retry');
    await until(() => rcv.received.find((r) => r.browser === 'flaky' && (r.json as { approvalId: string }).approvalId === approvalId));
    expect(rcv.attempts.filter((x) => x.browser === 'flaky').map((x) => x.status)).toEqual([500, 503, 201]);
    expect(await subscriptions(s)).toContain(flaky.subscription.endpoint);
    // The push is a delivery of kind push (CONTRACT §9): three attempts, delivered. The receiver has the push before the
    // server has the 201 and records the attempt, so the row is read once it has ended (seen: `accepted`, 2 attempts).
    const d = await until(async () => (await pushDeliveries(s, approvalId)).find((x) => x.to.url === flaky.subscription.endpoint && x.state !== 'accepted'));
    expect(d).toMatchObject({ kind: 'push', state: 'delivered', attempts: 3, from: { sessionKey: 'agent:main:push-retry' }, to: { url: flaky.subscription.endpoint } });
    await s.rpc('approvals.resolve', { approvalId, decision: 'deny' });
  });

  it('waits out a 429’s Retry-After before the retry, kept in the store (probe Q: retried after the backoff alone)', async () => {
    const busy = rcv.browser('busy');
    await s.rpc('push.subscribe', { subscription: busy.subscription });
    rcv.answer('busy', { status: 429, headers: { 'retry-after': '2' } });
    const approvalId = await pendingItem(s, 'agent:main:push-429');
    const waiting = await until(async () => (await s.rt.store.db.selectFrom('deliveries').selectAll().where('source', '=', `push:${approvalId}:${busy.subscription.endpoint}`).where('attempts', '=', 1).executeTakeFirst()) ?? null);
    expect(waiting.not_before).toEqual(expect.any(String));
    await until(() => rcv.received.find((r) => r.browser === 'busy'));
    const [first, second] = rcv.attempts.filter((x) => x.browser === 'busy');
    expect([first!.status, second!.status]).toEqual([429, 201]);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1900); // the backoff alone (webhooks.retryBaseMs 30) is 30 ms
    await s.rpc('approvals.resolve', { approvalId, decision: 'deny' });
  });

  it('a push that runs out of attempts is a dead delivery; deliveries.retry sends it again with a fresh token', async () => {
    const down = rcv.browser('down');
    await s.rpc('push.subscribe', { subscription: down.subscription });
    rcv.answer('down', 500, 502, 503, 504); // webhooks.maxAttempts is 4
    const approvalId = await pendingItem(s, 'agent:main:push-dead');
    const dead = await until(async () => (await pushDeliveries(s, approvalId)).find((x) => x.to.url === down.subscription.endpoint && x.state === 'dead'));
    expect(dead).toMatchObject({ attempts: 4, error: { code: 'channel_error', message: expect.stringMatching(/^push service answered 504/) } });
    expect(rcv.received.filter((r) => r.browser === 'down')).toEqual([]);
    expect(await s.rpc('deliveries.retry', { deliveryId: dead.deliveryId })).toEqual({ status: 'ok' });
    const got = await until(() => rcv.received.find((r) => r.browser === 'down'));
    expect(await until(async () => (await s.rpc<{ state: string; attempts: number }>('deliveries.get', { deliveryId: dead.deliveryId })).state === 'delivered' || null)).toBe(true);
    // The fresh token works.
    expect(await action(s, { approvalId, token: (got.json as { token: string }).token, decision: 'deny' })).toEqual({ status: 200, body: { status: 'ok' } });
  });

  it('a push whose item is decided before it gets through ends failed, not dead; a dead one whose item is decided since is not retried', async () => {
    const late = rcv.browser('late');
    await s.rpc('push.subscribe', { subscription: late.subscription });
    rcv.answer('late', 500, 500, 500, 500, 500, 500, 500, 500);
    const approvalId = await pendingItem(s, 'agent:main:push-late');
    await until(() => rcv.attempts.find((x) => x.browser === 'late'));
    await s.rpc('approvals.resolve', { approvalId, decision: 'deny' });
    // Before: `dead` with a Retry button on the board that could never send it (and counted an attempt each press).
    const ended = await until(async () => (await pushDeliveries(s, approvalId)).find((x) => x.to.url === late.subscription.endpoint && x.state !== 'accepted'));
    expect(ended).toMatchObject({ state: 'failed', error: { code: 'already_resolved' } });
    // Its attempts are the requests that went out: the one found decided sent nothing (probe Q: one more was counted).
    expect(ended.attempts).toBe(rcv.attempts.filter((x) => x.browser === 'late').length);

    const gone = rcv.browser('gone-dead');
    await s.rpc('push.subscribe', { subscription: gone.subscription });
    rcv.answer('gone-dead', 500, 502, 503, 504);
    const other = await pendingItem(s, 'agent:main:push-dead-decided');
    const dead = await until(async () => (await pushDeliveries(s, other)).find((x) => x.to.url === gone.subscription.endpoint && x.state === 'dead'));
    await s.rpc('approvals.resolve', { approvalId: other, decision: 'deny' });
    const refused = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'deliveries.retry', params: { deliveryId: dead.deliveryId } });
    expect(refused.body.error).toMatchObject({ code: -32009, data: { code: 'not_retryable' }, message: expect.stringContaining('no longer pending') });
    expect(await s.rpc('deliveries.get', { deliveryId: dead.deliveryId })).toMatchObject({ state: 'failed', attempts: dead.attempts, error: { code: 'already_resolved' } });
    await s.rpc('push.unsubscribe', { endpoint: late.subscription.endpoint });
    await s.rpc('push.unsubscribe', { endpoint: gone.subscription.endpoint });
  });

  it('push.unsubscribe removes the browser; bad subscriptions are -32602', async () => {
    const c = rcv.browser('c');
    await s.rpc('push.subscribe', { subscription: c.subscription });
    expect(await s.rpc('push.unsubscribe', { endpoint: c.subscription.endpoint })).toEqual({ status: 'ok' });
    expect(await subscriptions(s)).not.toContain(c.subscription.endpoint);
    for (const bad of [
      { subscription: { endpoint: 'not a url', keys: c.subscription.keys } },
      { subscription: { endpoint: c.subscription.endpoint, keys: { ...c.subscription.keys, p256dh: 'AAAA' } } },
      // 0x04 and 64 bytes that are not a point on P-256 (probe Q: accepted, and its first push ended dead).
      { subscription: { endpoint: c.subscription.endpoint, keys: { ...c.subscription.keys, p256dh: Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 1)]).toString('base64url') } } },
      { subscription: { endpoint: c.subscription.endpoint, keys: { ...c.subscription.keys, auth: 'x'.repeat(40) } } },
      { subscription: { endpoint: c.subscription.endpoint } },
      {},
    ]) {
      const r = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'push.subscribe', params: bad });
      expect(r.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request' } });
    }
  });
});

describe('push retries survive a restart (issue 25 item 2)', () => {
  it('a push answered 503, its server crashed before the retry: the restarted server sends it once, the delivery counts both attempts', async () => {
    // A backoff long enough that the crashed server cannot have retried before it went.
    const slow = { ...webhooks, retryBaseMs: 3000 };
    const dataDir = tmpDataDir();
    let first: TestServer | null = await startTestServer({ dataDir, config: { webhooks: slow, agents } });
    const key = (await first.rpc<{ publicKey: string }>('push.vapidKey')).publicKey;
    const own = await startPushReceiver(() => key);
    let second: TestServer | null = null;
    try {
      const br = own.browser('restart');
      await first.rpc('push.subscribe', { subscription: br.subscription });
      own.answer('restart', 503);
      const approvalId = await pendingItem(first, 'agent:main:push-restart');
      const waiting = await until(async () => (await pushDeliveries(first!, approvalId)).find((d) => d.attempts === 1));
      expect(waiting).toMatchObject({ state: 'accepted', attempts: 1, error: { code: 'channel_error', message: expect.stringMatching(/^push service answered 503/) } });
      await first.crash();
      first = null;
      expect(own.attempts.map((a) => a.status)).toEqual([503]);

      second = await startTestServer({ dataDir, config: { webhooks: slow, agents } });
      const done = await until(async () => (await pushDeliveries(second!, approvalId)).find((d) => d.state !== 'accepted'), 30_000);
      expect(done).toMatchObject({ kind: 'push', state: 'delivered', attempts: 2, to: { url: br.subscription.endpoint } });
      const got = own.received.filter((r) => (r.json as { approvalId: string }).approvalId === approvalId);
      expect(got).toHaveLength(1);
      expect(own.attempts.map((a) => a.status)).toEqual([503, 201]);
      expect(own.rejected).toEqual([]);
      // The message the restarted server made carries a working token.
      expect(await action(second, { approvalId, token: (got[0]!.json as { token: string }).token, decision: 'deny' })).toEqual({ status: 200, body: { status: 'ok' } });
    } finally {
      await first?.crash();
      await second?.close();
      await own.close();
    }
  }, 90_000);
});

describe.runIf(onPostgresPass())('push retries on PostgreSQL are any instance\'s', () => {
  it('a push answered 503 by a server that then crashed is sent by another instance still running', async () => {
    const slow = { ...webhooks, retryBaseMs: 3000 };
    const dataDir = tmpDataDir(); // one schema for both instances
    let first: TestServer | null = await startTestServer({ dataDir, config: { webhooks: slow, agents } });
    const other = await startTestServer({ dataDir, config: { webhooks: slow, agents } });
    const key = (await first.rpc<{ publicKey: string }>('push.vapidKey')).publicKey;
    const own = await startPushReceiver(() => key);
    try {
      const br = own.browser('other');
      await first.rpc('push.subscribe', { subscription: br.subscription });
      own.answer('other', 503);
      const approvalId = await pendingItem(first, 'agent:main:push-other');
      await until(async () => (await pushDeliveries(first!, approvalId)).find((d) => d.attempts === 1));
      await first.crash();
      first = null;
      const done = await until(async () => (await pushDeliveries(other, approvalId)).find((d) => d.state !== 'accepted'), 30_000);
      expect(done).toMatchObject({ state: 'delivered', attempts: 2 });
      expect(own.attempts.map((a) => a.status)).toEqual([503, 201]);
      expect(own.received.filter((r) => (r.json as { approvalId: string }).approvalId === approvalId)).toHaveLength(1);
    } finally {
      await first?.crash();
      await other.close();
      await own.close();
    }
  }, 90_000);
});

describe('what a push says about each kind of item', () => {
  const base = { approvalId: 'apr_1', sessionKey: 'agent:main:subagent:x', runId: 'r', callId: 'c', requestedAt: 't' };
  it('a one-line summary for every kind; only tool items carry a token', () => {
    expect(approvalPush({ ...base, kind: 'tool', tool: 'exec', args: { command: 'ls -la\n  /tmp' } }, ['agent:main:main', 'agent:main:subagent:x'], 'tok')).toEqual({
      type: 'approval', approvalId: 'apr_1', kind: 'tool', sessionKey: 'agent:main:subagent:x', tool: 'exec', parentChain: ['agent:main:main', 'agent:main:subagent:x'], summary: 'exec: ls -la /tmp', token: 'tok',
    });
    expect(approvalPush({ ...base, kind: 'elicitation', tool: 'mcp__files__ask', args: { server: 'files', message: 'Which folder?' } }, ['k']).summary).toBe('files asks: Which folder?');
    expect(approvalPush({ ...base, kind: 'budget', tool: 'budget', args: { spentUsd: 1.234, capUsd: 1 } }, ['k'])).not.toHaveProperty('token');
    expect(approvalPush({ ...base, kind: 'budget', tool: 'budget', args: { spentUsd: 1.234, capUsd: 1 } }, ['k']).summary).toBe('budget reached: $1.23 of $1.00');
    expect(approvalPush({ ...base, kind: 'tool', tool: 'write', args: { text: 'x'.repeat(500) } }, ['k']).summary).toHaveLength(140);
  });
});

describe('the test push service checks for itself', () => {
  it('refuses a push signed with another VAPID key, or whose body was altered', async () => {
    const own = await startPushReceiver(() => webpush.generateVAPIDKeys().publicKey);
    const other = webpush.generateVAPIDKeys();
    const b = own.browser('x');
    const send = (body?: (buf: Buffer) => Buffer) => {
      const d = webpush.generateRequestDetails(b.subscription, '{"hi":1}', { vapidDetails: { subject: 'mailto:t@example.com', ...other }, contentEncoding: 'aes128gcm' });
      return fetch(d.endpoint, { method: 'POST', headers: Object.fromEntries(Object.entries(d.headers).filter(([k]) => k !== 'Content-Length').map(([k, v]) => [k, String(v)])), body: new Uint8Array(body ? body(d.body) : d.body) });
    };
    expect((await send()).status).toBe(400);
    expect(own.rejected[0]?.why).toMatch(/k is not the server public key/);
    // With the right key expected, the same sender passes; a flipped ciphertext byte does not decrypt.
    const right = await startPushReceiver(() => other.publicKey);
    const c = right.browser('y');
    const send2 = (alter?: boolean) => {
      const d = webpush.generateRequestDetails(c.subscription, '{"hi":1}', { vapidDetails: { subject: 'mailto:t@example.com', ...other }, contentEncoding: 'aes128gcm' });
      const body = Buffer.from(d.body);
      if (alter) body[body.length - 20]! ^= 1;
      return fetch(d.endpoint, { method: 'POST', headers: Object.fromEntries(Object.entries(d.headers).filter(([k]) => k !== 'Content-Length').map(([k, v]) => [k, String(v)])), body: new Uint8Array(body) });
    };
    expect((await send2()).status).toBe(201);
    expect(right.received[0]?.json).toEqual({ hi: 1 });
    expect((await send2(true)).status).toBe(400);
    expect(right.rejected[0]?.why).toMatch(/auth|decrypt|Unsupported state/i);
    await own.close();
    await right.close();
  });
});

describe('push endpoints pass the SSRF rules', () => {
  let strict: TestServer;
  beforeAll(async () => {
    strict = await startTestServer({ config: { webhooks: { ...webhooks, allowPrivateNetwork: false }, agents } });
  });
  afterAll(async () => {
    await strict?.close();
  });

  it('refuses a loopback endpoint without webhooks.allowPrivateNetwork, at subscribe and at send', async () => {
    const d = rcv.browser('private');
    const r = await strict.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'push.subscribe', params: { subscription: d.subscription } });
    expect(r.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request', issues: [{ path: 'subscription.endpoint' }] } });
    expect(r.body.error.message).toMatch(/private or loopback/);
    // A row that got in anyway (written before the rule) is refused when sending: nothing reaches the receiver.
    const ts = new Date().toISOString();
    await strict.rt.store.db.insertInto('push_subscriptions').values({ endpoint: d.subscription.endpoint, p256dh: d.subscription.keys.p256dh, auth: d.subscription.keys.auth, created_at: ts, updated_at: ts }).execute();
    const approvalId = await pendingItem(strict, 'agent:main:push-ssrf');
    await until(() => strict.rt.store.db.selectFrom('push_actions').select('approval_id').where('approval_id', '=', approvalId).executeTakeFirst());
    await strict.rt.push.idle();
    expect(rcv.attempts.filter((x) => x.browser === 'private')).toEqual([]);
    expect(strict.rt.push.waitingRetries()).toBe(0);
    expect(await pushDeliveries(strict, approvalId)).toMatchObject([{ state: 'dead', attempts: 1, error: { code: 'forbidden', message: expect.stringMatching(/private or loopback/) } }]);
    await strict.rpc('approvals.resolve', { approvalId, decision: 'deny' });
  });
});

describe('the subscription cap holds under concurrency', () => {
  let capped: TestServer;
  beforeAll(async () => {
    capped = await startTestServer({ config: { webhooks, agents } });
  });
  afterAll(async () => {
    await capped?.close();
  });

  it('subscribes at once up to the cap store exactly 1,000; the rest are limit_exceeded (probe S: 1,009 on PostgreSQL)', async () => {
    const keys = rcv.browser('cap').subscription.keys;
    // 990 browsers already, then 100 at once: each used to count 990 before any of them inserted (a race: five rounds).
    const ts = new Date().toISOString();
    const rows = Array.from({ length: 990 }, (_, i) => ({ endpoint: `${rcv.origin}/cap/${i}`, p256dh: keys.p256dh, auth: keys.auth, created_at: ts, updated_at: ts }));
    const outcomes: Array<[number, number]> = [];
    for (let round = 0; round < 5; round++) {
      await capped.rt.store.db.deleteFrom('push_subscriptions').execute();
      for (let i = 0; i < rows.length; i += 200) await capped.rt.store.db.insertInto('push_subscriptions').values(rows.slice(i, i + 200)).execute();
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          capped.rpcRaw({ jsonrpc: '2.0', id: i, method: 'push.subscribe', params: { subscription: { endpoint: `${rcv.origin}/cap/x${i}`, keys } } }),
        ),
      );
      outcomes.push([answers.filter((a) => a.body.result?.status === 'ok').length, answers.filter((a) => a.body.error?.data?.code === 'limit_exceeded').length]);
    }
    expect(outcomes).toEqual(Array.from({ length: 5 }, () => [10, 90]));
    expect(await subscriptions(capped)).toHaveLength(1000);
    // A browser already subscribed may renew its keys at the cap.
    expect(await capped.rpc('push.subscribe', { subscription: { endpoint: `${rcv.origin}/cap/0`, keys } })).toEqual({ status: 'ok' });
  });
});
