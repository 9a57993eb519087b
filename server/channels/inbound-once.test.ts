// Inbound messages once and only once (a failed or cut-off acceptance, two senders' ids), and replies to every inbound peer delivered or recorded.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelsOf } from '../http/channel-inbound';
import { startTestServer, type TestServer, until } from '../testing/harness';
import type { ChannelService } from './index';
import { FAKES } from './testing/fake-apis';
import { startFakePlatform, type FakePlatform } from './testing/fake-platform';
import { serveChannels } from './testing/serve-channels';

const SECRET = 'hook-once-secret';
let s: TestServer;
let web: Awaited<ReturnType<typeof serveChannels>>;
let channels: ChannelService;
let fake: FakePlatform;

beforeAll(async () => {
  fake = await startFakePlatform(FAKES.webhook!.handler);
  s = await startTestServer({
    config: { channels: { webhook: { url: `${fake.url}/out`, secret: SECRET, dmPolicy: 'open', maxAttempts: 1, accounts: { work: { url: `${fake.url}/work` } } } } },
  });
  web = await serveChannels(s.rt);
  channels = channelsOf(s.rt);
});
afterAll(async () => {
  await channels?.idle();
  await new Promise((r) => setImmediate(r));
  await web?.close();
  await s?.close();
  await fake?.close();
});

const tag = crypto.randomBytes(3).toString('hex');
const post = (msg: Record<string, unknown>, ts = Math.floor(Date.now() / 1000)) => {
  const body = JSON.stringify(msg);
  return web.post('webhook', body, { 'x-crosstalk-timestamp': String(ts), 'x-crosstalk-signature': `sha256=${crypto.createHmac('sha256', SECRET).update(`${ts}.${body}`).digest('hex')}` });
};
const keyOf = async (from: string) => (await s.rt.store.db.selectFrom('runs').select('session_key').where('origin', 'like', `%${JSON.stringify(from).slice(1, -1)}%`).executeTakeFirst())?.session_key;
/** The turns (user rows) each session got from inbound messages with this text. */
async function turns(text: string): Promise<number> {
  const rows = await s.rt.store.db.selectFrom('messages').select('id').where('role', '=', 'user').where('content', '=', text).execute();
  return rows.length;
}
async function settle() {
  for (const r of await s.rt.store.db.selectFrom('runs').select('id').where('status', 'in', ['queued', 'running']).execute()) await s.rt.orchestrator.wait(r.id, 10_000);
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 5));
  await channels.idle();
}

describe('one message, one turn', () => {
  it('the same messageId from two senders, two conversations or two accounts is two turns; from one sender in one conversation, one', async () => {
    const id = `shared-${tag}`;
    expect((await post({ from: `x-${tag}`, text: `from x ${tag}`, messageId: id })).status).toBe(200);
    expect((await post({ from: `y-${tag}`, text: `from y ${tag}`, messageId: id })).status).toBe(200);
    expect((await post({ from: `x-${tag}`, text: `from x ${tag}`, messageId: id })).status).toBe(200);
    expect((await post({ from: `x-${tag}`, chatType: 'group', conversationId: `g1-${tag}`, text: `in g1 ${tag}`, messageId: id })).status).toBe(200);
    expect((await post({ from: `x-${tag}`, chatType: 'group', conversationId: `g2-${tag}`, text: `in g2 ${tag}`, messageId: id })).status).toBe(200);
    expect((await post({ from: `x-${tag}`, accountId: 'work', text: `at work ${tag}`, messageId: id })).status).toBe(200);
    await settle();
    // Before: y's message, both groups' and the work account's were dropped with 200 (one key, `webhook:<messageId>`).
    expect([await turns(`from x ${tag}`), await turns(`from y ${tag}`), await turns(`in g1 ${tag}`), await turns(`in g2 ${tag}`), await turns(`at work ${tag}`)]).toEqual([1, 1, 1, 1, 1]);
  });

  it('eight deliveries of one message at once: one turn, every one answered 200', async () => {
    const msg = { from: `c-${tag}`, text: `concurrent ${tag}`, messageId: `c-${tag}` };
    const rs = await Promise.all(Array.from({ length: 8 }, () => post(msg)));
    expect(rs.map((r) => r.status)).toEqual(Array(8).fill(200));
    await settle();
    expect(await turns(msg.text)).toBe(1);
  });

  it('a submit that failed (answered 500): the platform\'s redelivery is accepted, once; a redelivery after that starts nothing', async () => {
    const o = s.rt.orchestrator;
    const submit = o.submit;
    o.submit = async () => {
      o.submit = submit;
      throw new Error('injected: the store refused the write');
    };
    const msg = { from: `f-${tag}`, text: `fails once ${tag}`, messageId: `f-${tag}` };
    try {
      expect((await post(msg)).status).toBe(500);
    } finally {
      o.submit = submit;
    }
    expect(await turns(msg.text)).toBe(0);
    // Before: 200 and dropped: the claim of the failed attempt stayed, and the message was lost.
    expect((await post(msg)).status).toBe(200);
    expect((await post(msg)).status).toBe(200);
    await settle();
    expect(await turns(msg.text)).toBe(1);
  });

  it('a process that died between the claim and the submit (its claim pending, its owner gone): the redelivery is accepted, once', async () => {
    const msg = { from: `k-${tag}`, text: `killed after the claim ${tag}`, messageId: `k-${tag}` };
    const dedupeId = `webhook:${JSON.stringify(['default', 'direct', msg.from, msg.messageId])}`;
    // What the dead process left: the gate claimed, nothing accepted.
    await s.rt.store.db.insertInto('idempotency').values({ key: `inbound:${dedupeId}`, result: 'null', state: 'pending', owner: 'proc_dead', run_id: null, created_at: new Date().toISOString() }).execute();
    expect((await post(msg)).status).toBe(200);
    expect((await post(msg)).status).toBe(200);
    await settle();
    // Before: 200 and dropped (the claim was there), a message lost.
    expect(await turns(msg.text)).toBe(1);
  });

  it('a process that died after the acceptance, before its claim was settled: the redelivery starts nothing', async () => {
    const msg = { from: `a-${tag}`, text: `accepted then killed ${tag}`, messageId: `a-${tag}` };
    expect((await post(msg)).status).toBe(200);
    await settle();
    const dedupeId = `webhook:${JSON.stringify(['default', 'direct', msg.from, msg.messageId])}`;
    // The gate back as the dead process left it: pending, its owner gone (its acceptance claim committed with the run).
    await s.rt.store.db.updateTable('idempotency').set({ state: 'pending', owner: 'proc_dead' }).where('key', '=', `inbound:${dedupeId}`).execute();
    expect((await post(msg)).status).toBe(200);
    await settle();
    expect(await turns(msg.text)).toBe(1);
  });
});

describe('replies to every inbound peer', () => {
  it('a sender or conversation id with a space is answered (before: "reply routing failed" in the log, no delivery, no record)', async () => {
    const before = fake.calls(/^\/out$/).length;
    expect((await post({ from: `jo hn ${tag}`, text: `/reply to john ${tag}`, messageId: `j-${tag}` })).status).toBe(200);
    expect((await post({ from: `ann-${tag}`, chatType: 'group', conversationId: `ops room ${tag}`, text: `/reply to the room ${tag}`, messageId: `r-${tag}` })).status).toBe(200);
    await settle();
    const out = fake.calls(/^\/out$/).slice(before).map((r) => [r.body.to, r.body.chatType, r.body.text]);
    expect(out).toEqual(
      expect.arrayContaining([
        [`user:jo hn ${tag}`, 'direct', `to john ${tag}`],
        [`group:ops room ${tag}`, 'group', `to the room ${tag}`],
      ]),
    );
    const key = (await keyOf(`jo hn ${tag}`))!;
    const { deliveries } = await s.rpc<{ deliveries: any[] }>('deliveries.list', { sessionKey: key });
    expect(deliveries).toMatchObject([{ kind: 'channel', state: 'delivered', to: { channel: 'webhook', target: `user:jo hn ${tag}` } }]);
  });

  it('a dead reply to such a sender is sent again by deliveries.retry', async () => {
    fake.enqueue({ ...FAKES.webhook!.serverError, match: /^\/out$/ });
    expect((await post({ from: `re try ${tag}`, text: `/reply again ${tag}`, messageId: `t-${tag}` })).status).toBe(200);
    await settle();
    const key = (await keyOf(`re try ${tag}`))!;
    const [d] = (await s.rpc<{ deliveries: any[] }>('deliveries.list', { sessionKey: key })).deliveries;
    expect(d).toMatchObject({ state: 'dead' });
    const before = fake.calls(/^\/out$/).length;
    expect(await s.rpc('deliveries.retry', { deliveryId: d.deliveryId })).toMatchObject({ status: 'ok' });
    await until(async () => (await s.rpc<any>('deliveries.get', { deliveryId: d.deliveryId })).state === 'delivered');
    expect(fake.calls(/^\/out$/).slice(before).map((r) => [r.body.to, r.body.text])).toEqual([[`user:re try ${tag}`, `again ${tag}`]]);
  });

  it('a reply that cannot be routed at all leaves a failed delivery with its error, and a notice', async () => {
    // A run accepted with a channel origin whose target no rule takes, and no inbound peer (as runs accepted before
    // the peer was recorded): its reply has nowhere to go.
    const key = `agent:main:webhook:direct:unroutable-${tag}`;
    const { runId } = await s.rt.orchestrator.submit(key, { content: '/reply lost words', kind: 'message', author: { type: 'channel', id: 'webhook:x' } }, { origin: { channel: { id: 'webhook', to: `user:no where ${tag}` } } });
    await s.rt.orchestrator.wait(runId, 10_000);
    await settle();
    const { deliveries } = await s.rpc<{ deliveries: any[] }>('deliveries.list', { sessionKey: key });
    // Before: none (a level-50 "reply routing failed" log line was all).
    expect(deliveries).toMatchObject([{ kind: 'channel', state: 'failed', to: { channel: 'webhook', target: `user:no where ${tag}` }, error: { code: 'invalid_request' } }]);
    const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: key });
    expect(h.messages[0]).toMatchObject({ role: 'system', kind: 'notice', meta: { deliveryId: deliveries[0].deliveryId } });
  });

  it('a message for an account that is not configured is refused with 400, before any run', async () => {
    const r = await post({ from: `na-${tag}`, text: `no such account ${tag}`, accountId: 'nope', messageId: `na-${tag}` });
    // Before: 200, a run, and its reply failed with a level-40 log line ("channel webhook has no account nope").
    expect(r).toMatchObject({ status: 400, body: { ok: false, error: { code: 'invalid_request', message: expect.stringContaining('accountId "nope" is not configured') } } });
    expect(await turns(`no such account ${tag}`)).toBe(0);
  });
});
