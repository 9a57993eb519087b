// Which replies a dead process owed (owed-replies.ts): a channel run's reply row without its record, unless the run's
// own `message` call sent the same text; never a row of a run that did not come from a channel.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { channelOriginOf } from './reply-router';
import { channelDelivery } from './channel-deliveries';
import { owedReplies, replyDeliveryId } from './owed-replies';
import { FAKES } from './testing/fake-apis';
import { startFakePlatform, type FakePlatform } from './testing/fake-platform';
import { serveChannels } from './testing/serve-channels';
import { channelsOf } from '../http/channel-inbound';

const SECRET = 'hook-secret';
let s: TestServer;
let fake: FakePlatform;
let web: Awaited<ReturnType<typeof serveChannels>>;

beforeAll(async () => {
  fake = await startFakePlatform(FAKES.webhook!.handler);
  s = await startTestServer({ config: { agents: [{ id: 'main', channelTools: { message: 'auto' } }], channels: { webhook: { url: `${fake.url}/out`, secret: SECRET, dmPolicy: 'open' } } } });
  web = await serveChannels(s.rt);
});
afterAll(async () => {
  await channelsOf(s.rt)?.idle();
  await web?.close();
  await s?.close();
  await fake?.close();
});

const isChannelRun = (origin: unknown) => channelOriginOf(origin) !== null;

async function post(from: string, text: string) {
  const body = JSON.stringify({ from, text, messageId: crypto.randomUUID() });
  const ts = Math.floor(Date.now() / 1000);
  const sig = `sha256=${crypto.createHmac('sha256', SECRET).update(`${ts}.${body}`).digest('hex')}`;
  expect((await web.post('webhook', body, { 'content-type': 'application/json', 'x-crosstalk-timestamp': String(ts), 'x-crosstalk-signature': sig })).status).toBe(200);
}

async function inbound(from: string, text: string) {
  const body = JSON.stringify({ from, text, messageId: crypto.randomUUID() });
  const ts = Math.floor(Date.now() / 1000);
  const sig = `sha256=${crypto.createHmac('sha256', SECRET).update(`${ts}.${body}`).digest('hex')}`;
  expect((await web.post('webhook', body, { 'content-type': 'application/json', 'x-crosstalk-timestamp': String(ts), 'x-crosstalk-signature': sig })).status).toBe(200);
  const key = `agent:main:webhook:direct:${from}`;
  const reply = await until(async () => (await s.rt.store.db.selectFrom('messages').selectAll().where('session_key', '=', key).where('role', '=', 'assistant').where('kind', '=', 'message').executeTakeFirst()) ?? null);
  await until(async () => (await s.rt.store.db.selectFrom('deliveries').select('state').where('id', '=', replyDeliveryId(Number(reply.id))).executeTakeFirst())?.state === 'delivered');
  return reply;
}

describe('a step that says what its message call sends to the same chat', () => {
  it('sends it once: by the call, not also as the reply', async () => {
    // The scripted model answers this step with the text and the call together (CONTRACT §2).
    await post('peer-same', '/tool message {"action":"send","channel":"webhook","to":"peer-same","text":"same words"}\n/reply same words');
    const key = 'agent:main:webhook:direct:peer-same';
    const runId = await until(async () => (await s.rt.store.db.selectFrom('runs').select('id').where('session_key', '=', key).executeTakeFirst())?.id);
    await s.rpc('agent.wait', { runId });
    await channelsOf(s.rt)!.idle();
    // Before: the step's text was written (and delivered by the reply router) before the call ran: twice.
    const sent = fake.calls(/^\/out$/).filter((c) => c.body.to === 'user:peer-same').map((c) => c.body.text);
    expect(sent.filter((t: string) => t === 'same words')).toHaveLength(1);
    expect(sent).toHaveLength(2); // the words, and the step after the call (its result)
  });
});

describe('replies owed by a dead process', () => {
  it('a channel reply without its record is owed; one the run sent with its message tool, or one of a run not from a channel, is not', async () => {
    const reply = await inbound('peer-owed', '/reply owed words');
    const plain = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:not-a-channel', message: '/reply not owed' });
    await s.rpc('agent.wait', { runId: plain.runId });
    // Recorded: nothing owed.
    expect((await owedReplies(s.rt.store, isChannelRun, { graceMs: 0 })).map((m) => m.id)).not.toContain(Number(reply.id));
    // As if the process died between the row and its record.
    await s.rt.store.db.deleteFrom('deliveries').where('id', '=', replyDeliveryId(Number(reply.id))).execute();
    const owed = await owedReplies(s.rt.store, isChannelRun, { graceMs: 0 });
    expect(owed.map((m) => [m.id, m.content])).toEqual([[Number(reply.id), 'owed words']]);
    // Too young for a look that leaves live routers a grace, or past `upTo`: not this look's.
    expect(await owedReplies(s.rt.store, isChannelRun, { graceMs: 60_000 })).toEqual([]);
    expect(await owedReplies(s.rt.store, isChannelRun, { graceMs: 0, upTo: Number(reply.id) - 1 })).toEqual([]);
    // The run's own message call sent the same words there: its reply, not owed again.
    await s.rt.store.createDeliveries([
      channelDelivery('dlv_tool_same', { agentId: 'main', channel: 'webhook', target: { to: 'user:peer-owed' } as never, sessionKey: reply.session_key, text: 'owed words', via: 'message', runId: reply.run_id!, sourceSessionKey: reply.session_key }),
    ]);
    expect(await owedReplies(s.rt.store, isChannelRun, { graceMs: 0 })).toEqual([]);
  });
});
