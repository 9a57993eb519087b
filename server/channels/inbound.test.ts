// Inbound webhooks over real HTTP (signature checks per platform), routing into sessions, and replies going back where they came from.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelsOf } from '../http/channel-inbound';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { createMessageTool } from '../tools/message';
import type { ChannelService } from './index';
import { CREDS, FAKES } from './testing/fake-apis';
import { startFakePlatform, type FakePlatform } from './testing/fake-platform';
import { serveChannels } from './testing/serve-channels';

const SLACK_SECRET = 'slack-signing-secret';
const TG_SECRET = 'tg-secret-token';
const MM_TOKEN = 'mm-outgoing-token';
const HOOK_SECRET = 'hook-secret';
const RELAY_SECRET = 'relay-secret';
const ed = crypto.generateKeyPairSync('ed25519');
const edPublicHex = (ed.publicKey.export({ format: 'der', type: 'spki' }) as Buffer).subarray(-32).toString('hex');

let s: TestServer;
let web: Awaited<ReturnType<typeof serveChannels>>;
let channels: ChannelService;
const fake: Record<string, FakePlatform> = {};

beforeAll(async () => {
  for (const n of ['slack', 'telegram', 'discord', 'mattermost', 'webhook']) fake[n] = await startFakePlatform(FAKES[n]!.handler);
  s = await startTestServer({
    config: {
      channels: {
        slack: { botToken: CREDS.slackToken, signingSecret: SLACK_SECRET, apiBaseUrl: `${fake.slack!.url}/api/`, dmPolicy: 'open' },
        telegram: { botToken: CREDS.telegramToken, webhookSecret: TG_SECRET, apiBaseUrl: fake.telegram!.url, dmPolicy: 'open' },
        discord: { botToken: CREDS.discordToken, publicKey: edPublicHex, relaySecret: RELAY_SECRET, apiBaseUrl: `${fake.discord!.url}/api`, dmPolicy: 'open' },
        mattermost: { botToken: CREDS.mattermostToken, outgoingToken: MM_TOKEN, apiBaseUrl: fake.mattermost!.url, dmPolicy: 'open' },
        webhook: { url: `${fake.webhook!.url}/out`, secret: HOOK_SECRET, dmPolicy: 'open' },
        matrix: { accessToken: 'x', apiBaseUrl: 'http://127.0.0.1:1', dmPolicy: 'open' },
      },
    },
  });
  web = await serveChannels(s.rt);
  channels = channelsOf(s.rt);
});
afterAll(async () => {
  await channels?.idle();
  await new Promise((r) => setImmediate(r));
  await web?.close();
  await s?.close();
  for (const f of Object.values(fake)) await f.close();
});

const slackHeaders = (body: string, ts = Math.floor(Date.now() / 1000)) => ({
  'x-slack-request-timestamp': String(ts),
  'x-slack-signature': `v0=${crypto.createHmac('sha256', SLACK_SECRET).update(`v0:${ts}:${body}`).digest('hex')}`,
});
/** CONTRACT §5 signed webhook: HMAC of "<ts>.<body>", the timestamp in its own header. */
const hmac = (secret: string, body: string, ts = Math.floor(Date.now() / 1000)) => ({
  'x-crosstalk-timestamp': String(ts),
  'x-crosstalk-signature': `sha256=${crypto.createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex')}`,
});
const discordHeaders = (body: string, at = Math.floor(Date.now() / 1000)) => {
  const ts = String(at);
  return { 'x-signature-timestamp': ts, 'x-signature-ed25519': crypto.sign(null, Buffer.from(ts + body), ed.privateKey).toString('hex') };
};

/** Waits for the runs a request started, then for their replies to be delivered. */
async function settle(accepted: string[]) {
  for (const runId of accepted) await s.rt.orchestrator.wait(runId, 10_000);
  // Not orchestrator.idle(): EventBus.drain spins while a flush is scheduled but nothing is pending. Let the flushes run.
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 5));
  await channels.idle();
}

async function runsOf(sessionKey: string): Promise<string[]> {
  const rows = await s.rt.store.db.selectFrom('runs').select('id').where('session_key', '=', sessionKey).orderBy('created_at').execute();
  return rows.map((r) => r.id);
}

describe('slack', () => {
  const event = (text: string, ts: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ type: 'event_callback', team_id: 'T1', event_id: `Ev${ts}`, event: { type: 'message', user: 'U777', text, channel: 'C0ABC', channel_type: 'channel', ts, ...extra } });

  it('a thread reply also sent to the channel (thread_broadcast) and a message with a file (file_share) are answered; an edit is not', async () => {
    const key = 'agent:main:slack:channel:c0abc:thread:1700000001.000100';
    const broadcast = event('broadcast words', '1700000001.000200', { thread_ts: '1700000001.000100', subtype: 'thread_broadcast' });
    const file = event('words with a file', '1700000001.000300', { thread_ts: '1700000001.000100', subtype: 'file_share' });
    const edit = event('edited words', '1700000001.000400', { thread_ts: '1700000001.000100', subtype: 'message_changed' });
    for (const b of [broadcast, file, edit]) expect((await web.post('slack', b, slackHeaders(b))).status).toBe(200);
    // Before: both dropped (any subtype was), the person never answered.
    const runs = await runsOf(key);
    expect(runs).toHaveLength(2);
    await settle(runs);
  });

  it('answers url_verification only when signed', async () => {
    const body = JSON.stringify({ type: 'url_verification', challenge: 'ch4ll3nge' });
    expect(await web.post('slack', body, slackHeaders(body))).toEqual({ status: 200, body: { challenge: 'ch4ll3nge' } });
    expect((await web.post('slack', body, { ...slackHeaders(body), 'x-slack-signature': 'v0=00' })).status).toBe(401);
    expect((await web.post('slack', body, slackHeaders(body, Math.floor(Date.now() / 1000) - 3600))).status).toBe(401);
    expect((await web.post('slack', body)).status).toBe(401);
  });

  it('an inbound thread message and an outbound `message` to that thread land in one session; the reply goes into the thread', async () => {
    const key = 'agent:main:slack:channel:c0abc:thread:1700000000.000100';
    const body = event('hello from the thread', '1700000000.000200', { thread_ts: '1700000000.000100' });
    const before = fake.slack!.calls(/chat\.postMessage/).length;
    const res = await web.post('slack', body, slackHeaders(body));
    expect(res.status).toBe(200);
    const runs = await runsOf(key);
    expect(runs).toHaveLength(1);
    await settle(runs);

    // the run's reply went back to Slack, in the thread
    const posts = fake.slack!.calls(/chat\.postMessage/).slice(before);
    expect(posts.map((p) => p.body)).toEqual([expect.objectContaining({ channel: 'C0ABC', thread_ts: '1700000000.000100', text: 'echo: hello from the thread' })]);

    // an agent elsewhere sends to the same thread with the message tool (lower-case channel id)
    const tool = createMessageTool(channels);
    const agent = s.rt.orchestrator.agent('main')!;
    const out = await tool.execute(
      { action: 'send', channel: 'slack', to: 'c0abc', text: 'outbound into the thread', threadId: '1700000000.000100' },
      { runId: 'run_elsewhere', sessionKey: 'agent:main:main', agent, callId: 'c1', signal: new AbortController().signal, counters: new Map(), delivered: new Set() },
    );
    expect(out).toMatchObject({ status: 'ok', sessionKey: key });
    const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: key });
    expect(h.messages.reverse().map((m) => [m.role, m.kind, m.content])).toEqual([
      ['user', 'message', 'hello from the thread'],
      ['assistant', 'message', 'echo: hello from the thread'],
      ['assistant', 'mirror', 'outbound into the thread'],
    ]);
    expect(h.messages[0].author).toEqual({ type: 'channel', id: 'slack:U777' });
  });

  it('a redelivered event starts nothing new; bot posts (our own replies) are ignored', async () => {
    const key = 'agent:main:slack:channel:c0abc';
    const body = event('once only', '1700000005.000001');
    await web.post('slack', body, slackHeaders(body));
    await web.post('slack', body, { ...slackHeaders(body), 'x-slack-retry-num': '1' });
    const bot = event('from a bot', '1700000005.000002', { bot_id: 'B1' });
    expect((await web.post('slack', bot, slackHeaders(bot))).status).toBe(200);
    const runs = await runsOf(key);
    expect(runs).toHaveLength(1);
    await settle(runs);
  });
});

describe('telegram', () => {
  const update = (id: number, chatId: number, text: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ update_id: id, message: { message_id: id, from: { id: chatId > 0 ? chatId : 31337, is_bot: false, first_name: 'Ann' }, chat: { id: chatId, type: chatId > 0 ? 'private' : 'supergroup' }, text, ...extra } });

  it('refuses a missing or wrong secret token', async () => {
    const body = update(1, 4242, 'hi');
    expect((await web.post('telegram', body)).status).toBe(401);
    expect((await web.post('telegram', body, { 'x-telegram-bot-api-secret-token': 'wrong' })).status).toBe(401);
  });

  it('first contact by `send`, then the person answers: one session, and the reply goes back to the chat', async () => {
    const sent = await channels.send({ channel: 'telegram', to: '4242', message: 'Hi Ann, first contact' });
    expect(sent.sessionKey).toBe('agent:main:telegram:direct:4242');
    const before = fake.telegram!.calls(/sendMessage/).length;
    const res = await web.post('telegram', update(2, 4242, 'hello back'), { 'x-telegram-bot-api-secret-token': TG_SECRET });
    expect(res.status).toBe(200);
    const runs = await runsOf(sent.sessionKey);
    expect(runs).toHaveLength(1);
    await settle(runs);
    const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: sent.sessionKey });
    expect(h.messages.reverse().map((m) => [m.kind, m.content])).toEqual([
      ['mirror', 'Hi Ann, first contact'],
      ['message', 'hello back'],
      ['message', 'echo: hello back'],
    ]);
    expect(fake.telegram!.calls(/sendMessage/).slice(before).map((r) => r.body)).toEqual([expect.objectContaining({ chat_id: 4242, text: 'echo: hello back' })]);
    const session = await s.rt.store.getSession(sent.sessionKey);
    expect(JSON.parse(session!.meta!)).toMatchObject({ provider: 'telegram', chatType: 'direct', from: 'telegram:4242', originatingTo: '4242' });
  });

  it('replies reach the chat in transcript order, across runs: a run whose reply is retried is not overtaken by the next run\'s', async () => {
    const key = 'agent:main:telegram:direct:5151';
    // The first reply is rate-limited (retry after 1 s).
    fake.telegram!.enqueue({ ...FAKES.telegram!.rateLimited, match: /sendMessage/ });
    await web.post('telegram', update(190, 5151, '/reply first answer'), { 'x-telegram-bot-api-secret-token': TG_SECRET });
    const [first] = await runsOf(key);
    await s.rt.orchestrator.wait(first!, 10_000);
    await web.post('telegram', update(191, 5151, '/reply second answer'), { 'x-telegram-bot-api-secret-token': TG_SECRET });
    await settle(await runsOf(key));
    const sent = fake.telegram!.requests.filter((r) => /sendMessage$/.test(r.path) && r.body.chat_id === 5151).map((r) => r.body.text);
    // Before: ['first answer' (429), 'second answer', 'first answer']: the chat read them out of order.
    expect(sent).toEqual(['first answer', 'first answer', 'second answer']);
  });

  it('a forum topic message routes to <chatId>:topic:<id> and is answered in the topic', async () => {
    const before = fake.telegram!.calls(/sendMessage/).length;
    await web.post('telegram', update(3, -100123, 'in the topic', { message_thread_id: 42, is_topic_message: true }), { 'x-telegram-bot-api-secret-token': TG_SECRET });
    const runs = await runsOf('agent:main:telegram:group:-100123:topic:42');
    expect(runs).toHaveLength(1);
    await settle(runs);
    expect(fake.telegram!.calls(/sendMessage/).slice(before).map((r) => r.body)).toEqual([expect.objectContaining({ chat_id: -100123, message_thread_id: 42 })]);
  });
});

describe('discord', () => {
  it('answers a signed PING with PONG and refuses a bad signature', async () => {
    const body = JSON.stringify({ type: 1, id: 'i1' });
    expect(await web.post('discord', body, discordHeaders(body))).toEqual({ status: 200, body: { type: 1 } });
    const h = discordHeaders(body);
    expect((await web.post('discord', JSON.stringify({ type: 1, id: 'i2' }), h)).status).toBe(401);
  });

  it('a slash command in a guild channel starts a run in that channel session and acknowledges privately', async () => {
    const body = JSON.stringify({ type: 2, id: 'int-9', channel_id: '123456789012345678', guild_id: '1', member: { user: { id: '9001000001', username: 'ann' } }, data: { name: 'ask', options: [{ name: 'message', type: 3, value: 'slash hello' }] } });
    // A correctly signed interaction from more than 5 minutes ago is a replay: refused before it is parsed.
    expect((await web.post('discord', body, discordHeaders(body, Math.floor(Date.now() / 1000) - 301))).status).toBe(401);
    expect(await runsOf('agent:main:discord:channel:123456789012345678')).toHaveLength(0);
    const res = await web.post('discord', body, discordHeaders(body));
    expect(res).toEqual({ status: 200, body: { type: 4, data: { content: 'Received.', flags: 64 } } });
    const runs = await runsOf('agent:main:discord:channel:123456789012345678');
    expect(runs).toHaveLength(1);
    await settle(runs);
    expect(fake.discord!.calls(/\/channels\/123456789012345678\/messages$/).map((r) => r.body.content)).toContain('echo: slash hello');
  });

  it('a relayed MESSAGE_CREATE is checked by HMAC; a thread message routes to the thread channel', async () => {
    const body = JSON.stringify({ t: 'MESSAGE_CREATE', d: { id: 'm1', channel_id: '323456789012345678', guild_id: '1', content: 'in a thread', author: { id: '9001000001', username: 'ann' } } });
    expect((await web.post('discord', body, hmac('wrong', body))).status).toBe(401);
    expect((await web.post('discord', body, hmac(RELAY_SECRET, body))).status).toBe(200);
    const runs = await runsOf('agent:main:discord:channel:323456789012345678');
    expect(runs).toHaveLength(1);
    await settle(runs);
  });
});

describe('mattermost and the generic webhook', () => {
  it('mattermost outgoing webhook: token checked, form body routed to the channel session, reply posted via the API', async () => {
    const form = (token: string) => new URLSearchParams({ token, team_id: 't', channel_id: 'abcdefghijklmnopqrstuvwxyz', channel_name: 'town-square', user_id: 'u1', user_name: 'ann', post_id: 'p1', text: 'mm hello', trigger_word: '' }).toString();
    const ct = { 'content-type': 'application/x-www-form-urlencoded' };
    expect((await web.post('mattermost', form('bad'), ct)).status).toBe(401);
    expect((await web.post('mattermost', form(MM_TOKEN), ct)).status).toBe(200);
    const runs = await runsOf('agent:main:mattermost:channel:abcdefghijklmnopqrstuvwxyz');
    expect(runs).toHaveLength(1);
    await settle(runs);
    expect(fake.mattermost!.calls(/\/api\/v4\/posts$/).map((r) => r.body)).toContainEqual({ channel_id: 'abcdefghijklmnopqrstuvwxyz', message: 'echo: mm hello' });
  });

  it('webhook: HMAC over the timestamp and body checked, stale or unstamped refused; the reply is POSTed, signed the same way, to the outbound url', async () => {
    const body = JSON.stringify({ from: 'ext-user', text: 'hook hello', messageId: 'h1' });
    const now = Math.floor(Date.now() / 1000);
    expect((await web.post('webhook', body, hmac('nope', body))).status).toBe(401);
    expect((await web.post('webhook', body)).status).toBe(401);
    // The body-only signature of before (no timestamp) is refused…
    expect((await web.post('webhook', body, { 'x-crosstalk-signature': `sha256=${crypto.createHmac('sha256', HOOK_SECRET).update(body).digest('hex')}` })).status).toBe(401);
    // …and so is a good signature more than 5 minutes old, or one whose timestamp was changed after signing.
    expect((await web.post('webhook', body, hmac(HOOK_SECRET, body, now - 301))).status).toBe(401);
    expect((await web.post('webhook', body, { ...hmac(HOOK_SECRET, body, now - 301), 'x-crosstalk-timestamp': String(now) })).status).toBe(401);
    expect(await runsOf('agent:main:webhook:direct:ext-user')).toHaveLength(0);
    expect((await web.post('webhook', body, hmac(HOOK_SECRET, body))).status).toBe(200);
    const runs = await runsOf('agent:main:webhook:direct:ext-user');
    expect(runs).toHaveLength(1);
    await settle(runs);
    const out = fake.webhook!.calls(/^\/out$/);
    expect(out.map((r) => r.body)).toContainEqual(expect.objectContaining({ to: 'user:ext-user', text: 'echo: hook hello' }));
    const r = out.at(-1)!;
    const ts = r.headers['x-crosstalk-timestamp'] as string;
    expect(Math.abs(Number(ts) - Date.now() / 1000)).toBeLessThanOrEqual(300);
    expect(r.headers['x-crosstalk-signature']).toBe(`sha256=${crypto.createHmac('sha256', HOOK_SECRET).update(`${ts}.${r.raw}`).digest('hex')}`);
  });

  it('webhook: the same signed request sent again without a messageId (a retry, a replay inside 5 minutes) runs once', async () => {
    const body = JSON.stringify({ from: 'ext-noid', text: 'no id here' });
    const headers = hmac(HOOK_SECRET, body);
    expect((await web.post('webhook', body, headers)).status).toBe(200);
    expect((await web.post('webhook', body, headers)).status).toBe(200);
    // Signed again (a new timestamp), the same text is a new message.
    await new Promise((r) => setTimeout(r, 1100));
    expect((await web.post('webhook', body, hmac(HOOK_SECRET, body))).status).toBe(200);
    const runs = await runsOf('agent:main:webhook:direct:ext-noid');
    await settle(runs);
    expect(runs).toHaveLength(2);
  });

  it('unknown channels, channels without inbound and oversized bodies are refused', async () => {
    expect((await web.post('nope', '{}')).status).toBe(404);
    expect((await web.post('matrix', '{}')).status).toBe(404);
    expect((await web.post('webhook', 'x'.repeat(1024 * 1024 + 1))).status).toBe(413);
    expect((await web.post('webhook', 'not json', hmac(HOOK_SECRET, 'not json'))).status).toBe(400);
  });
});

describe('outbound text a sender can steer', () => {
  it('pings no one at large: Slack gets &, < and > escaped (no <!channel>), Discord allows user mentions only, Mattermost\'s @all/@channel/@here are plain words', async () => {
    const text = 'hey <!channel> @everyone <@&1234567890> a < b && c > d';
    await channels.send({ channel: 'slack', to: 'C0ABC', message: text });
    const slack = fake.slack!.calls(/chat\.postMessage$/).at(-1)!;
    // Before: the text as is, a broadcast to the whole channel.
    expect(slack.body.text).toBe('hey &lt;!channel&gt; @everyone &lt;@&amp;1234567890&gt; a &lt; b &amp;&amp; c &gt; d');
    await channels.send({ channel: 'discord', to: 'channel:1300000000000000001', message: text });
    const discord = fake.discord!.calls(/\/messages$/).at(-1)!;
    // Before: no allowed_mentions, so @everyone and the role pinged with the bot's permissions.
    expect(discord.body).toMatchObject({ content: text, allowed_mentions: { parse: ['users'] } });
    await channels.send({ channel: 'mattermost', to: 'abcdefghijklmnopqrstuvwxyz', message: 'hey @all and @Channel, @here; @alice and mail@allday.example stay' });
    const mm = fake.mattermost!.calls(/\/api\/v4\/posts$/).at(-1)!;
    // Before: the text as is, so @all, @channel and @here notified the whole channel.
    expect(mm.body).toMatchObject({ message: 'hey @\u2060all and @\u2060Channel, @\u2060here; @alice and mail@allday.example stay' });
  });
});

describe('reply routing', () => {
  it('per-run memory is freed when a run ends here, and when this process stops driving it without an end event (fenced after a takeover)', async () => {
    // A channel run that ends normally: nothing of it is kept once its replies are out. (The base: an earlier
    // test called the message tool for a made-up run id that never ends here.)
    await channels.idle();
    const base = channels.retained();
    const body = JSON.stringify({ from: 'mem-user', text: 'remember nothing', messageId: `mem-${Date.now()}` });
    expect((await web.post('webhook', body, hmac(HOOK_SECRET, body))).status).toBe(200);
    await settle(await runsOf('agent:main:webhook:direct:mem-user'));
    await channels.idle();
    expect(channels.retained()).toEqual(base);

    // A run whose start this process saw, then dropped by it with no end event written here: what the orchestrator
    // does (bus.unregisterRun) when its session's lease was taken over and its writes are fenced.
    const runId = `run_fenced_${Date.now()}`;
    s.rt.bus.registerRun(runId, 'agent:main:webhook:direct:fenced', 0);
    s.rt.bus.emit(runId, 'lifecycle', { phase: 'start', origin: { channel: { id: 'webhook', to: 'user:fenced' } } });
    // It asked for an approval that is decided elsewhere: this process never sees its resolved event.
    s.rt.bus.emit(runId, 'approval', { phase: 'requested', approvalId: `apr_fenced_${Date.now()}`, tool: 'exec', args: {} });
    await s.rt.bus.drain();
    expect(channels.retained().origins).toBe(base.origins + 1);
    s.rt.bus.unregisterRun(runId);
    await channels.idle();
    expect(channels.retained()).toEqual(base);
  });

  it('a run requested by a sub-agent (origin.from) does not deliver to the channel, even with a channel origin', async () => {
    const before = fake.telegram!.requests.length;
    const key = 'agent:main:telegram:direct:5150';
    const { runId } = await s.rt.orchestrator.submit(
      key,
      { content: 'from a parent', kind: 'inter_session', author: { type: 'agent', id: 'researcher' } },
      { origin: { from: { sessionKey: 'agent:researcher:main', agentId: 'researcher' }, channel: { id: 'telegram', to: '5150' } } },
    );
    await settle([runId]);
    expect((await s.rpc<any>('agent.wait', { runId })).status).toBe('ok');
    expect(fake.telegram!.requests.length).toBe(before);
  });

  it('a run with no channel origin (a gateway `agent` call) delivers nothing', async () => {
    const before = fake.telegram!.requests.length;
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:telegram:direct:6160', message: 'typed in the web room' });
    await settle([runId]);
    expect(fake.telegram!.requests.length).toBe(before);
  });

  it('a failed reply delivery leaves a notice in the session instead of vanishing', async () => {
    fake.telegram!.enqueue({ ...FAKES.telegram!.unauthorized, match: /sendMessage/ });
    const body = JSON.stringify({ update_id: 90, message: { message_id: 90, from: { id: 7070, first_name: 'Bo' }, chat: { id: 7070, type: 'private' }, text: 'will fail' } });
    await web.post('telegram', body, { 'x-telegram-bot-api-secret-token': TG_SECRET });
    const runs = await runsOf('agent:main:telegram:direct:7070');
    await settle(runs);
    await new Promise((r) => setImmediate(r));
    const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:telegram:direct:7070' });
    expect(h.messages[0]).toMatchObject({ role: 'system', kind: 'notice', content: expect.stringContaining('authentication failed'), meta: { deliveryId: expect.stringMatching(/^dlv_reply_/) } });
    // And a delivery record (CONTRACT §9): the reply had none, so nothing showed it, and nothing could send it again.
    const { deliveries } = await s.rpc<{ deliveries: any[] }>('deliveries.list', { sessionKey: 'agent:main:telegram:direct:7070' });
    expect(deliveries).toMatchObject([{ deliveryId: h.messages[0].meta.deliveryId, kind: 'channel', state: 'failed', to: { channel: 'telegram', target: '7070' }, error: { code: 'channel_error' } }]);
  });

  it('a reply the platform refused with a server error is a dead delivery that deliveries.retry sends again, unmirrored', async () => {
    const key = 'agent:main:telegram:direct:7171';
    fake.telegram!.enqueue({ ...FAKES.telegram!.serverError, match: /sendMessage/ });
    const before = fake.telegram!.calls(/sendMessage/).length;
    const body = JSON.stringify({ update_id: 91, message: { message_id: 91, from: { id: 7171, first_name: 'Cy' }, chat: { id: 7171, type: 'private' }, text: 'answer me later' } });
    await web.post('telegram', body, { 'x-telegram-bot-api-secret-token': TG_SECRET });
    await settle(await runsOf(key));
    await s.rt.channels.idle();
    const [d] = (await s.rpc<{ deliveries: any[] }>('deliveries.list', { sessionKey: key })).deliveries;
    expect(d).toMatchObject({ kind: 'channel', state: 'dead', attempts: 1, from: { sessionKey: key } });
    const rows = (await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: key })).messages.length;
    expect(await s.rpc('deliveries.retry', { deliveryId: d.deliveryId })).toMatchObject({ status: 'ok' });
    await until(async () => (await s.rpc<any>('deliveries.get', { deliveryId: d.deliveryId })).state === 'delivered');
    // Both attempts count, the one that got through too, as a send's do (before: 1, and a reply delivered at once showed 0).
    const got = await s.rpc<{ attempts: number; error?: unknown }>('deliveries.get', { deliveryId: d.deliveryId });
    expect(got.attempts).toBe(2);
    expect(got.error).toBeUndefined();
    const sent = fake.telegram!.calls(/sendMessage/).slice(before);
    expect(sent).toHaveLength(2);
    expect(JSON.stringify(sent[1]!.body)).toContain('answer me later');
    expect((await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: key })).messages).toHaveLength(rows);
  });
});
