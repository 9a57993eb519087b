// `send` (CONTRACT §3) through the channel service on a real runtime: derived keys, session entries, mirrors the model sees, errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAIServer } from '../models/testing/fake-openai-server';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { createChannels, sendParams, type ChannelService } from './index';
import { CREDS, FAKES } from './testing/fake-apis';
import { startFakePlatform, type FakePlatform } from './testing/fake-platform';

let s: TestServer;
let tg: FakePlatform;
let openai: FakeOpenAIServer;
let channels: ChannelService;

beforeAll(async () => {
  tg = await startFakePlatform(FAKES.telegram!.handler);
  openai = await startFakeOpenAI();
  process.env.OPENAI_BASE_URL = openai.baseURL;
  process.env.OPENAI_API_KEY = 'sk-test';
  s = await startTestServer({
    config: {
      agents: [{ id: 'main' }, { id: 'gpt', model: 'openai:gpt-test' }],
      channels: { telegram: { botToken: CREDS.telegramToken, apiBaseUrl: tg.url } },
    },
  });
  channels = createChannels({ config: s.rt.config, store: s.rt.store, bus: s.rt.bus, orchestrator: s.rt.orchestrator, log: s.rt.log });
});
afterAll(async () => {
  await new Promise((r) => setImmediate(r));
  await s?.close();
  await tg?.close();
  await openai?.close();
});

describe('send', () => {
  it('telegram -100123 thread 42 with no sessionKey: derives the topic key, creates the session, delivers, mirrors', async () => {
    const before = tg.requests.length;
    const res = await channels.send({ channel: 'telegram', to: '-100123', threadId: '42', message: 'hi' });
    expect(res).toEqual({ messageId: expect.stringMatching(/^\d+$/), sessionKey: 'agent:main:telegram:group:-100123:topic:42' });
    expect(tg.requests.slice(before).map((r) => r.body)).toEqual([{ chat_id: -100123, text: 'hi', message_thread_id: 42 }]);

    const list = await s.rpc<{ sessions: any[] }>('sessions.list', { kind: 'channel' });
    expect(list.sessions.map((x) => x.sessionKey)).toContain('agent:main:telegram:group:-100123:topic:42');
    const row = await s.rt.store.getSession(res.sessionKey);
    expect(row).toMatchObject({ agent_id: 'main', kind: 'channel' });
    expect(JSON.parse(row!.meta!)).toEqual({
      provider: 'telegram',
      chatType: 'group',
      from: 'telegram:-100123:topic:42',
      to: 'telegram:group:-100123:topic:42',
      originatingChannel: 'telegram',
      originatingTo: '-100123',
      originatingThreadId: '42',
    });

    const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: res.sessionKey });
    expect(h.messages).toHaveLength(1);
    expect(h.messages[0]).toMatchObject({ role: 'assistant', kind: 'mirror', content: 'hi', author: { type: 'agent', id: 'main', name: 'Main' }, meta: { via: 'send', channel: 'telegram', messageId: res.messageId } });
  });

  it('a given sessionKey is used, lowercased, and created when missing', async () => {
    const res = await channels.send({ channel: 'telegram', to: '4243', message: 'into a chosen session', sessionKey: 'AGENT:MAIN:Ops' });
    expect(res.sessionKey).toBe('agent:main:ops');
    expect(await s.rt.store.getSession('agent:main:ops')).toMatchObject({ agent_id: 'main', kind: 'other' });
    const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:ops' });
    expect(h.messages.map((m) => [m.kind, m.content])).toEqual([['mirror', 'into a chosen session']]);
    // the derived session for that target was not touched
    expect(await s.rt.store.getSession('agent:main:telegram:direct:4243')).toBeUndefined();
  });

  it('a repeated idempotencyKey returns the first answer and delivers once', async () => {
    const before = tg.requests.length;
    const p = { channel: 'telegram', to: '4244', message: 'once', idempotencyKey: 'idem-1' };
    const [a, b] = await Promise.all([channels.send(p), channels.send(p)]);
    const c = await channels.send(p);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    expect(tg.requests.length - before).toBe(1);
  });

  it('a keyed send that went dead and was sent again by a repeat of its key is not sent a third time by deliveries.retry', async () => {
    const p = { channel: 'telegram', to: '4245', message: 'keyed after dead', idempotencyKey: 'idem-dead' };
    const sends = () => tg.requests.filter((r) => r.path.endsWith('/sendMessage') && r.body.text === p.message).length;
    tg.enqueue({ status: 502, match: /sendMessage$/ });
    await expect(channels.send(p)).rejects.toThrow();
    const first = (await s.rpc<{ deliveries: any[] }>('deliveries.list', { kind: 'channel' })).deliveries.find((d) => d.deliveryId.startsWith('dlv_send_') && !d.deliveryId.slice(9).includes('_'));
    expect(first).toMatchObject({ state: 'dead' });
    const again = await channels.send(p); // the repeat: sent, under a record of its own
    expect(again.messageId).toMatch(/^\d+$/);
    expect(sends()).toBe(2);
    // Before: {status: "ok"}, and the chat got the message a second time (two mirror rows).
    const r = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'deliveries.retry', params: { deliveryId: first.deliveryId } });
    expect(r.body.error).toMatchObject({ code: -32009, data: { code: 'not_retryable' }, message: expect.stringContaining('a repeat of its idempotency key') });
    await new Promise((res) => setTimeout(res, 200));
    expect(sends()).toBe(2);
    expect(await s.rpc('deliveries.get', { deliveryId: first.deliveryId })).toMatchObject({ state: 'failed', error: { code: 'not_retryable', message: expect.stringContaining('a repeat of its idempotency key') } });
  });

  it("a message longer than one Telegram post (4,096) goes out in posts that fit, in order; the first one's id answers", async () => {
    const before = tg.requests.length;
    const text = Array.from({ length: 120 }, (_, i) => `line ${i} ${'w'.repeat(60)}`).join('\n'); // ~8,500 characters
    const res = await channels.send({ channel: 'telegram', to: '4246', message: text });
    const posts = tg.requests.slice(before).filter((r) => r.path.endsWith('/sendMessage')).map((r) => r.body.text as string);
    // Before: one post of 8,500 characters, which Telegram refuses ("message is too long"): the message was lost.
    expect(posts.length).toBe(3);
    for (const p of posts) expect(p.length).toBeLessThanOrEqual(4096);
    expect(posts.join('\n')).toBe(text);
    expect(res.messageId).toMatch(/^\d+$/);
    // Mirrored once, whole.
    const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: res.sessionKey });
    expect(h.messages.map((m) => m.content)).toEqual([text]);
  });

  it('a long message whose delivery died part-way is retried from the part that did not get through: no part twice', async () => {
    const text = Array.from({ length: 120 }, (_, i) => `row ${i} ${'v'.repeat(60)}`).join('\n');
    const base = FAKES.telegram!.handler;
    let calls = 0;
    let down = true;
    tg.setHandler((r) => (r.path.endsWith('/sendMessage') && r.body.chat_id === 4247 && ++calls > 1 && down ? { status: 502 } : base(r)));
    try {
      await expect(channels.send({ channel: 'telegram', to: '4247', message: text })).rejects.toThrow();
      const dead = (await s.rpc<{ deliveries: any[] }>('deliveries.list', { kind: 'channel', state: 'dead' })).deliveries.find((d) => d.to.target === '4247')!;
      expect(dead).toBeTruthy();
      down = false;
      expect(await s.rpc('deliveries.retry', { deliveryId: dead.deliveryId })).toEqual({ status: 'ok' });
      await until(async () => (await s.rpc<{ state: string }>('deliveries.get', { deliveryId: dead.deliveryId })).state === 'delivered');
    } finally {
      tg.setHandler(base);
    }
    const got = tg.requests.filter((r) => r.path.endsWith('/sendMessage') && r.body.chat_id === 4247).map((r) => r.body.text as string);
    const parts = [...new Set(got)];
    expect(parts.join('\n')).toBe(text);
    // The first part went out once (before: the retry sent every part again); the failed second was tried again.
    expect(got.filter((t) => t === parts[0])).toHaveLength(1);
  });

  it('errors: unknown_channel, invalid_request (bad target, bad params), unknown_agent', async () => {
    await expect(channels.send({ channel: 'myspace', to: 'x', message: 'hi' })).rejects.toMatchObject({ code: 'unknown_channel' });
    await expect(channels.send({ channel: 'telegram', to: 'not a chat', message: 'hi' })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(channels.send({ channel: 'telegram', to: '1', message: '' })).rejects.toMatchObject({ code: 'invalid_request', issues: [expect.objectContaining({ path: 'message' })] });
    await expect(channels.send({ channel: 'telegram', to: '1', message: 'x', extra: 1 } as never)).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(channels.send({ channel: 'telegram', to: '1', message: 'x', sessionKey: 'agent:ghost:main' })).rejects.toMatchObject({ code: 'unknown_agent' });
  });

  it('sendParams is the zod edge: lowercases channel and session key, accepts numeric ids', () => {
    expect(sendParams.parse({ channel: 'Telegram', to: '-1', message: 'm', threadId: 42, sessionKey: 'Agent:Main:Main' })).toEqual({ channel: 'telegram', to: '-1', message: 'm', threadId: '42', sessionKey: 'agent:main:main' });
  });

  it('webchat delivery is the mirror itself', async () => {
    const res = await channels.send({ channel: 'webchat', to: 'user:guest-1', message: 'to the browser' });
    expect(res.sessionKey).toBe('agent:main:webchat:direct:guest-1');
    const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: res.sessionKey });
    expect(h.messages[0]).toMatchObject({ kind: 'mirror', content: 'to the browser' });
  });
});

describe('mirrored sends reach the model', () => {
  it('a later run in the target session sees the mirrored text as its own earlier assistant turn', async () => {
    const sent = await channels.send({ channel: 'telegram', to: '9090', message: 'The meeting moved to 3pm.', sessionKey: 'agent:gpt:telegram:direct:9090' });
    openai.enqueue({ text: 'Yes, 3pm.' });
    const before = openai.requests.length;
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: sent.sessionKey, message: 'When is the meeting?' });
    expect(await s.rpc('agent.wait', { runId })).toMatchObject({ status: 'ok', response: 'Yes, 3pm.' });
    const msgs = openai.requests[before]!.body.messages.filter((m) => m.role !== 'system');
    expect(msgs.map((m) => [m.role, typeof m.content === 'string' ? m.content : JSON.stringify(m.content)])).toEqual([
      ['assistant', 'The meeting moved to 3pm.'],
      ['user', 'When is the meeting?'],
    ]);
  });
});
