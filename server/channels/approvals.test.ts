// Approvals in chat, against the loopback Telegram, Slack and Discord fakes in their real wire formats (callback_query, block_actions, components):
// only `approvers` decide, never a call their own message started; allowFrom (even "*") admits senders and nothing more.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelsOf } from '../http/channel-inbound';
import { readSse, startTestServer, type TestServer } from '../testing/harness';
import type { ChannelService } from './index';
import { CREDS, FAKES } from './testing/fake-apis';
import { startFakePlatform, type FakePlatform } from './testing/fake-platform';
import { serveChannels } from './testing/serve-channels';

const SLACK_SECRET = 'slack-signing-secret';
const TG_SECRET = 'tg-secret-token';
const ed = crypto.generateKeyPairSync('ed25519');
const edPublicHex = (ed.publicKey.export({ format: 'der', type: 'spki' }) as Buffer).subarray(-32).toString('hex');
const ALICE = 5150; // Telegram approver
const BOB = 5151; // Telegram approver
const MALLORY = 6666; // Telegram stranger, admitted by allowFrom "*"; not an approver

let s: TestServer;
let web: Awaited<ReturnType<typeof serveChannels>>;
let channels: ChannelService;
const fake: Record<string, FakePlatform> = {};

beforeAll(async () => {
  for (const n of ['slack', 'telegram', 'discord']) fake[n] = await startFakePlatform(FAKES[n]!.handler);
  s = await startTestServer({
    config: {
      // Runs from these chats use channelTools (trust follows the run): the delegate call itself is allowed,
      // exec (in the chat's run and in its delegates) asks.
      agents: [{ id: 'main', channelTools: { delegate_agent: 'auto' } }, { id: 'researcher' }],
      channels: {
        slack: { botToken: CREDS.slackToken, signingSecret: SLACK_SECRET, apiBaseUrl: `${fake.slack!.url}/api/`, allowFrom: ['U0DEV', 'U0BOSS'], approvers: ['U0BOSS'] },
        telegram: { botToken: CREDS.telegramToken, webhookSecret: TG_SECRET, apiBaseUrl: fake.telegram!.url, allowFrom: ['*'], approvers: [String(ALICE), String(BOB)] },
        discord: { botToken: CREDS.discordToken, publicKey: edPublicHex, apiBaseUrl: `${fake.discord!.url}/api`, allowFrom: ['4400000000000000001'], approvers: ['4400000000000000002'] },
      },
    },
  });
  web = await serveChannels(s.rt);
  channels = channelsOf(s.rt);
});
afterAll(async () => {
  await channels?.idle();
  await web?.close();
  await s?.close();
  for (const f of Object.values(fake)) await f.close();
});

const slackHeaders = (body: string) => {
  const ts = Math.floor(Date.now() / 1000);
  return {
    'content-type': 'application/x-www-form-urlencoded',
    'x-slack-request-timestamp': String(ts),
    'x-slack-signature': `v0=${crypto.createHmac('sha256', SLACK_SECRET).update(`v0:${ts}:${body}`).digest('hex')}`,
  };
};
const tgHeaders = { 'x-telegram-bot-api-secret-token': TG_SECRET };
const discordHeaders = (body: string) => {
  const ts = String(Math.floor(Date.now() / 1000));
  return { 'x-signature-timestamp': ts, 'x-signature-ed25519': crypto.sign(null, Buffer.from(ts + body), ed.privateKey).toString('hex') };
};

async function until<T>(what: string, fn: () => Promise<T | undefined> | T | undefined): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const v = await fn();
    if (v !== undefined && v !== null && v !== false) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const pendingIn = async (sessionKey: string) => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey })).approvals;
const runOf = async (sessionKey: string) => (await s.rt.store.db.selectFrom('runs').select('id').where('session_key', '=', sessionKey).orderBy('created_at', 'desc').executeTakeFirst())!.id;

describe('Telegram: inline keyboard and callback_query', () => {
  let seq = 9000;
  const tgMessage = (chatId: number, text: string) => JSON.stringify({ update_id: ++seq, message: { message_id: seq, from: { id: chatId, is_bot: false, first_name: 'Alice', username: 'alice' }, chat: { id: chatId, type: 'private' }, text } });
  const press = (fromId: number, chatId: number, messageId: number, data: string) =>
    JSON.stringify({
      update_id: ++seq,
      callback_query: { id: `cbq${seq}`, from: { id: fromId, is_bot: false, first_name: 'Pressing', username: `user${fromId}` }, message: { message_id: messageId, date: 0, chat: { id: chatId, type: 'private' }, text: 'Approval needed' }, chat_instance: '-77', data },
    });

  const cards = () => fake.telegram!.calls(/sendMessage$/).filter((c) => c.body.reply_markup);
  const postsOf = async (approvalId: string) => ((await until('the posted requests', async () => s.rt.store.getIdempotent(`chat-approval:${approvalId}`))) as { posts: Array<{ to: string; messageId: string }> }).posts;

  it("a stranger's call: the card goes to the approvers' DMs, not to the stranger; the stranger cannot decide it; an approver does, and the room sees who", async () => {
    const key = `agent:main:telegram:direct:${MALLORY}`;
    const before = cards().length;
    const res = await web.post('telegram', tgMessage(MALLORY, '/tool exec {"command":"echo from-chat"}'), tgHeaders);
    expect(res.status).toBe(200);
    const [approval] = await until('a pending approval', async () => ((await pendingIn(key)).length ? pendingIn(key) : undefined));
    const posts = await postsOf(approval.approvalId);
    const sent = cards().slice(before);
    // One card per approver, each in that approver's own chat; none in the chat of the sender who asked.
    expect(sent.map((c) => c.body.chat_id).sort()).toEqual([ALICE, BOB]);
    expect(posts.map((p) => p.to).sort()).toEqual([String(ALICE), String(BOB)]);
    const post = sent.find((c) => c.body.chat_id === ALICE)!;
    expect(post.body.text).toContain('exec');
    const keyboard = post.body.reply_markup.inline_keyboard[0] as Array<{ text: string; callback_data: string }>;
    expect(keyboard.map((b) => b.text)).toEqual(['Allow once', 'Allow always', 'Deny']);
    expect(keyboard.every((b) => b.callback_data.includes(approval.approvalId) && Buffer.byteLength(b.callback_data) <= 64)).toBe(true);
    const aliceMsg = Number(posts.find((p) => p.to === String(ALICE))!.messageId);

    // The stranger presses Allow with a forged keyboard in their own chat: it was not asked there.
    expect((await web.post('telegram', press(MALLORY, MALLORY, 1, keyboard[0]!.callback_data), tgHeaders)).status).toBe(200);
    await channels.idle();
    expect(await pendingIn(key)).toHaveLength(1);
    expect(fake.telegram!.calls(/answerCallbackQuery$/).at(-1)!.body.text).toMatch(/not asked here/);
    // …or claiming the approver's chat: being admitted by allowFrom "*" is not being an approver.
    expect((await web.post('telegram', press(MALLORY, ALICE, aliceMsg, keyboard[0]!.callback_data), tgHeaders)).status).toBe(200);
    await channels.idle();
    expect(await pendingIn(key)).toHaveLength(1);
    expect(fake.telegram!.calls(/answerCallbackQuery$/).at(-1)!.body.text).toMatch(/only approvers/);

    // Alice, an approver, allows once from her DM.
    const runId = await runOf(key);
    expect((await web.post('telegram', press(ALICE, ALICE, aliceMsg, keyboard[0]!.callback_data), tgHeaders)).status).toBe(200);
    const done = await s.rpc<{ status: string; response: string }>('agent.wait', { runId });
    expect(done.status).toBe('ok');
    await channels.idle();
    expect(await pendingIn(key)).toHaveLength(0);

    // The room: the resolved event says who decided; a notice row in the session says so too.
    const evs = await readSse(`${s.url}/api/gateway/events?runId=${runId}`, { lastEventId: 0, until: (e) => e.some((x) => x.stream === 'lifecycle' && x.data.phase === 'end') });
    expect(evs.find((e) => e.stream === 'approval' && e.data.phase === 'resolved')?.data).toMatchObject({
      approvalId: approval.approvalId,
      decision: 'allow_once',
      by: { type: 'chat', channel: 'telegram', id: String(ALICE), name: `user${ALICE}` },
    });
    // The record (approvals.history): decided in chat, by which peer.
    const rec = await s.rpc<{ approvals: any[] }>('approvals.history', { sessionKey: key });
    expect(rec.approvals.find((r) => r.approvalId === approval.approvalId)).toMatchObject({ decision: 'allow_once', decidedBy: { type: 'chat', id: String(ALICE), channel: 'telegram' } });
    const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: key, includeTools: true });
    expect(h.messages.find((m) => m.kind === 'notice')).toMatchObject({ content: `exec: Allowed once by user${ALICE} (Telegram)`, meta: { approvalId: approval.approvalId, decision: 'allow_once' } });
    expect(h.messages.find((m) => m.kind === 'tool_result')?.tool.result).toMatchObject({ exitCode: 0, stdout: 'from-chat\n' });

    // Every card is edited to say who decided, without buttons.
    for (const p of posts) {
      const edit = fake.telegram!.calls(/editMessageText$/).find((c) => c.body.chat_id === Number(p.to) && c.body.message_id === Number(p.messageId));
      expect(edit?.body).toMatchObject({ text: expect.stringContaining(`Allowed once by user${ALICE} (Telegram)`) });
      expect(edit?.body.reply_markup).toBeUndefined();
    }

    // A second decision, from the room, is already_resolved (CONTRACT §3).
    const again = await s.rpcRaw({ jsonrpc: '2.0', id: 7, method: 'approvals.resolve', params: { approvalId: approval.approvalId, decision: 'deny' } });
    expect(again.body.error).toMatchObject({ code: -32009, data: { code: 'already_resolved' } });
  });

  it("an approver's own call goes to the other approvers only, and the approver cannot decide it", async () => {
    const key = `agent:main:telegram:direct:${ALICE}`;
    const before = cards().length;
    await web.post('telegram', tgMessage(ALICE, '/tool exec {"command":"echo own"}'), tgHeaders);
    const [approval] = await until('a pending approval', async () => ((await pendingIn(key)).length ? pendingIn(key) : undefined));
    const posts = await postsOf(approval.approvalId);
    expect(cards().slice(before).map((c) => c.body.chat_id)).toEqual([BOB]);
    const data = cards().at(-1)!.body.reply_markup.inline_keyboard[0][0].callback_data as string; // Allow once

    // Alice presses in Bob's chat (a forwarded or forged keyboard): her own message started this call.
    await web.post('telegram', press(ALICE, BOB, Number(posts[0]!.messageId), data), tgHeaders);
    await channels.idle();
    expect((await s.rt.store.getApproval(approval.approvalId))?.status).toBe('pending');
    expect(fake.telegram!.calls(/answerCallbackQuery$/).at(-1)!.body.text).toMatch(/your own message/);

    await web.post('telegram', press(BOB, BOB, Number(posts[0]!.messageId), data), tgHeaders);
    expect((await s.rpc<{ status: string }>('agent.wait', { runId: await runOf(key) })).status).toBe('ok');
    await channels.idle();
    expect((await s.rt.store.getApproval(approval.approvalId))?.status).toBe('allowed');
  });

  it("a delegate's approval goes to the approvers of the chat that delegated; a press in another chat is refused", async () => {
    const key = `agent:main:telegram:direct:${MALLORY}`;
    const before = cards().length;
    const prompt = '/tool exec {"command":"echo from-delegate"}';
    await web.post('telegram', tgMessage(MALLORY, `/tool delegate_agent ${JSON.stringify({ agent_id: 'researcher', prompt })}`), tgHeaders);
    const post = await until('the delegate request in the chat', () => cards()[before + 1]);
    expect(cards().slice(before).map((c) => c.body.chat_id).sort()).toEqual([ALICE, BOB]);
    expect(post.body.text).toMatch(/agent:researcher:subagent:/);
    const data = post.body.reply_markup.inline_keyboard[0][2].callback_data as string; // Deny
    const approvalId = data.split(':')[2]!;
    const approval = await s.rt.store.getApproval(approvalId);
    expect(approval?.session_key).toMatch(/^agent:researcher:subagent:/);

    // Pressed in some other chat (a forged or stale keyboard): refused.
    await web.post('telegram', press(ALICE, 31337, 1, data), tgHeaders);
    await channels.idle();
    expect((await s.rt.store.getApproval(approvalId))?.status).toBe('pending');

    await web.post('telegram', press(ALICE, ALICE, 1, data), tgHeaders);
    const parentRun = await runOf(key);
    expect((await s.rpc<{ status: string }>('agent.wait', { runId: parentRun })).status).toBe('ok');
    await channels.idle();
    expect((await s.rt.store.getApproval(approvalId))?.status).toBe('denied');
    expect(fake.telegram!.calls(/editMessageText$/).at(-1)!.body.text).toContain(`Denied by user${ALICE} (Telegram)`);
  });
});

describe('Slack: interactive buttons and block_actions', () => {
  const event = (text: string, ts: string, channel = 'C0APPR', user = 'U0DEV') =>
    JSON.stringify({ type: 'event_callback', team_id: 'T1', event_id: `Ev${ts}`, event: { type: 'message', user, text, channel, channel_type: 'channel', ts } });
  const blockActions = (user: string, channel: string, actionId: string, value: string) =>
    `payload=${encodeURIComponent(
      JSON.stringify({
        type: 'block_actions',
        user: { id: user, username: user.toLowerCase(), team_id: 'T1' },
        api_app_id: 'A1',
        token: 'legacy',
        container: { type: 'message', message_ts: '1700000001.000001', channel_id: channel, is_ephemeral: false },
        trigger_id: '1.2.3',
        team: { id: 'T1', domain: 'crosstalk' },
        channel: { id: channel, name: 'approvals' },
        message: { type: 'message', ts: '1700000001.000001', text: 'Approval needed' },
        response_url: 'https://hooks.slack.com/actions/T1/1/x',
        actions: [{ action_id: actionId, block_id: 'ct_approval_x', value, type: 'button', action_ts: '1700000009.1', text: { type: 'plain_text', text: 'Allow once' } }],
      }),
    )}`;

  it('a decision from the room is shown in the chat; a press after it is already decided', async () => {
    const key = 'agent:main:slack:channel:c0appr';
    const ev = event('/tool exec {"command":"echo slack"}', '1700000100.000001');
    expect((await web.post('slack', ev, { 'content-type': 'application/json', ...signedJson(ev) })).status).toBe(200);
    const [approval] = await until('a pending approval', async () => ((await pendingIn(key)).length ? pendingIn(key) : undefined));
    const post = await until('the request in Slack', () => fake.slack!.calls(/chat\.postMessage/).find((c) => c.body.blocks));
    expect(post.body.channel).toBe('C0APPR');
    // @slack/web-api posts form-encoded, with blocks as a JSON string.
    const actions = JSON.parse(post.body.blocks).find((b: any) => b.type === 'actions');
    expect(actions.elements.map((e: any) => [e.text.text, e.value])).toEqual([
      ['Allow once', approval.approvalId],
      ['Allow always', approval.approvalId],
      ['Deny', approval.approvalId],
    ]);

    // The operator decides first (over JSON-RPC: "the operator (API)").
    await s.rpc('approvals.resolve', { approvalId: approval.approvalId, decision: 'allow_always' });
    expect((await s.rpc<{ status: string }>('agent.wait', { runId: await runOf(key) })).status).toBe('ok');
    await channels.idle();
    const update = await until('the Slack message edited', () => fake.slack!.calls(/chat\.update/).at(-1));
    const [posted] = ((await s.rt.store.getIdempotent(`chat-approval:${approval.approvalId}`)) as { posts: Array<{ messageId: string }> }).posts;
    expect(update.body).toMatchObject({ channel: 'C0APPR', ts: posted!.messageId, text: expect.stringContaining('Allowed always by the operator (API)') });
    expect(JSON.parse(update.body.blocks).some((b: any) => b.type === 'actions')).toBe(false);

    // The boss presses Deny afterwards in Slack: already decided, the approval stays allowed.
    const body = blockActions('U0BOSS', 'C0APPR', 'ct_approval_d', approval.approvalId);
    expect((await web.post('slack', body, slackHeaders(body))).status).toBe(200);
    await channels.idle();
    expect((await s.rt.store.getApproval(approval.approvalId))?.status).toBe('allowed');
    expect(fake.slack!.calls(/chat\.postEphemeral/).at(-1)!.body).toMatchObject({ channel: 'C0APPR', user: 'U0BOSS', text: expect.stringMatching(/Already decided/) });
  });

  it('block_actions from an allowed user resolve the approval; unsigned ones are refused', async () => {
    // Another channel: the first test's allow_always made exec automatic in c0appr.
    const key = 'agent:main:slack:channel:c0appr2';
    const ev = event('/tool exec {"command":"echo again"}', '1700000200.000001', 'C0APPR2');
    await web.post('slack', ev, { 'content-type': 'application/json', ...signedJson(ev) });
    const [approval] = await until('a pending approval', async () => ((await pendingIn(key)).length ? pendingIn(key) : undefined));
    await until('the request in Slack', async () => s.rt.store.getIdempotent(`chat-approval:${approval.approvalId}`));
    // Pressed in the first channel: this approval was not asked there.
    const elsewhere = blockActions('U0BOSS', 'C0APPR', 'ct_approval_a1', approval.approvalId);
    expect((await web.post('slack', elsewhere, slackHeaders(elsewhere))).status).toBe(200);
    await channels.idle();
    expect(await pendingIn(key)).toHaveLength(1);
    const body = blockActions('U0BOSS', 'C0APPR2', 'ct_approval_a1', approval.approvalId);
    expect((await web.post('slack', body, { ...slackHeaders(body), 'x-slack-signature': 'v0=00' })).status).toBe(401);
    expect(await pendingIn(key)).toHaveLength(1);
    expect((await web.post('slack', body, slackHeaders(body))).status).toBe(200);
    expect((await s.rpc<{ status: string }>('agent.wait', { runId: await runOf(key) })).status).toBe('ok');
    await channels.idle();
    expect((await s.rt.store.getApproval(approval.approvalId))).toMatchObject({ status: 'allowed', decision: 'allow_once' });
    expect(fake.slack!.calls(/chat\.update/).at(-1)!.body.text).toContain('Allowed once by u0boss (Slack)');
  });

  it("from a DM, the card goes to the approver's own DM (conversations.open), where the approver decides it", async () => {
    const key = 'agent:main:slack:direct:u0dev';
    const ev = JSON.stringify({ type: 'event_callback', team_id: 'T1', event_id: 'EvDM1', event: { type: 'message', user: 'U0DEV', text: '/tool exec {"command":"echo dm"}', channel: 'D0DEVDM', channel_type: 'im', ts: '1700000400.000001' } });
    await web.post('slack', ev, { 'content-type': 'application/json', ...signedJson(ev) });
    const [approval] = await until('a pending approval', async () => ((await pendingIn(key)).length ? pendingIn(key) : undefined));
    const post = await until('the request in the approver DM', () => fake.slack!.calls(/chat\.postMessage/).find((c) => c.body.blocks && JSON.parse(c.body.blocks).some((b: any) => b.block_id === `ct_approval_${approval.approvalId}`)));
    expect(fake.slack!.calls(/conversations\.open/).at(-1)!.body.users).toBe('U0BOSS');
    expect(post.body.channel).toBe('D0BOSS'); // not the requester's DM
    // A press is matched against the stored record of where the card went (written once the platform answered).
    await until('the posted record', async () => s.rt.store.getIdempotent(`chat-approval:${approval.approvalId}`));
    const body = blockActions('U0BOSS', 'D0BOSS', 'ct_approval_a1', approval.approvalId);
    expect((await web.post('slack', body, slackHeaders(body))).status).toBe(200);
    expect(await s.rpc<{ status: string; response: string }>('agent.wait', { runId: await runOf(key) })).toMatchObject({ status: 'ok', response: expect.stringContaining('dm') });
  });

  it("in a channel the card is posted there; when the only approver is the one who asked, no card is posted and the room decides", async () => {
    const key = 'agent:main:slack:channel:c0appr3';
    const before = fake.slack!.calls(/chat\.postMessage/).filter((c) => c.body.blocks).length;
    const ev = event('/tool exec {"command":"echo boss"}', '1700000300.000001', 'C0APPR3', 'U0BOSS');
    await web.post('slack', ev, { 'content-type': 'application/json', ...signedJson(ev) });
    const [approval] = await until('a pending approval', async () => ((await pendingIn(key)).length ? pendingIn(key) : undefined));
    await channels.idle();
    expect(fake.slack!.calls(/chat\.postMessage/).filter((c) => c.body.blocks)).toHaveLength(before);
    expect(await s.rt.store.getIdempotent(`chat-approval:${approval.approvalId}`)).toBeUndefined();
    // A press anyway (a forged payload) is refused: nothing was asked there, and the boss asked it.
    const body = blockActions('U0BOSS', 'C0APPR3', 'ct_approval_a1', approval.approvalId);
    await web.post('slack', body, slackHeaders(body));
    await channels.idle();
    expect((await s.rt.store.getApproval(approval.approvalId))?.status).toBe('pending');
    await s.rpc('approvals.resolve', { approvalId: approval.approvalId, decision: 'deny' });
    expect((await s.rpc<{ status: string }>('agent.wait', { runId: await runOf(key) })).status).toBe('ok');
  });
});

describe('Discord: components', () => {
  it('a MESSAGE_COMPONENT press is acknowledged (type 6) and decides; the message loses its buttons', async () => {
    const slash = JSON.stringify({ type: 2, id: '5500000000000000001', channel_id: '7700000000000000001', guild_id: '1', member: { user: { id: '4400000000000000001', username: 'dana' } }, data: { name: 'ask', options: [{ name: 'text', type: 3, value: '/tool exec {"command":"echo discord"}' }] } });
    expect((await web.post('discord', slash, discordHeaders(slash))).status).toBe(200);
    const key = 'agent:main:discord:channel:7700000000000000001';
    const [approval] = await until('a pending approval', async () => ((await pendingIn(key)).length ? pendingIn(key) : undefined));
    const post = await until('the request in Discord', () => fake.discord!.calls(/\/channels\/7700000000000000001\/messages$/).find((c) => c.body.components));
    await until('the posted record', async () => s.rt.store.getIdempotent(`chat-approval:${approval.approvalId}`));
    const buttons = post.body.components[0].components as Array<{ label: string; custom_id: string }>;
    expect(buttons.map((b) => b.label)).toEqual(['Allow once', 'Allow always', 'Deny']);
    const press = (id: string, username: string) =>
      JSON.stringify({ type: 3, id: '5500000000000000002', application_id: '3300000000000000001', token: 'itoken', channel_id: '7700000000000000001', guild_id: '1', member: { user: { id, username } }, data: { custom_id: buttons[0]!.custom_id, component_type: 2 } });
    // Dana asked (and is allowed to write): not an approver. The press is acknowledged at once, its follow-up after
    // (before: the acknowledgement waited for the follow-up, here held 3 s; Discord allows 3 s, follow-ups after it).
    const base = FAKES.discord!.handler;
    let followedUp = false;
    fake.discord!.setHandler(async (r) => {
      if (/\/webhooks\//.test(r.path)) {
        await new Promise((res) => setTimeout(res, 3000));
        followedUp = true;
      }
      return base(r);
    });
    const own = press('4400000000000000001', 'dana');
    expect(await web.post('discord', own, discordHeaders(own))).toEqual({ status: 200, body: { type: 6 } });
    expect(followedUp).toBe(false);
    await channels.idle();
    expect(followedUp).toBe(true);
    fake.discord!.setHandler(base);
    expect(await pendingIn(key)).toHaveLength(1);
    expect(fake.discord!.calls(/\/webhooks\//).at(-1)!.body.content).toMatch(/only approvers/);
    // Erin, an approver in the channel, allows.
    const erin = press('4400000000000000002', 'erin');
    expect(await web.post('discord', erin, discordHeaders(erin))).toEqual({ status: 200, body: { type: 6 } });
    expect((await s.rpc<{ status: string }>('agent.wait', { runId: await runOf(key) })).status).toBe('ok');
    await channels.idle();
    const edit = fake.discord!.calls(/\/messages\/\d+$/).at(-1)!;
    expect(edit.method).toBe('PATCH');
    expect(edit.body).toMatchObject({ content: expect.stringContaining('Allowed once by erin (Discord)'), components: [] });
  });
});

describe('Discord: a request from a DM', () => {
  it("goes to the approver's DM channel (users/@me/channels), where the approver's press decides it", async () => {
    const slash = JSON.stringify({ type: 2, id: '5500000000000000011', channel_id: '7700000000000000099', user: { id: '4400000000000000001', username: 'dana' }, data: { name: 'ask', options: [{ name: 'text', type: 3, value: '/tool exec {"command":"echo discord-dm"}' }] } });
    expect((await web.post('discord', slash, discordHeaders(slash))).status).toBe(200);
    const key = 'agent:main:discord:direct:4400000000000000001';
    const [approval] = await until('a pending approval', async () => ((await pendingIn(key)).length ? pendingIn(key) : undefined));
    await until('the posted record', async () => s.rt.store.getIdempotent(`chat-approval:${approval.approvalId}`));
    expect(fake.discord!.calls(/\/users\/@me\/channels$/).at(-1)!.body).toEqual({ recipient_id: '4400000000000000002' });
    const post = fake.discord!.calls(/\/channels\/880000000000000001\/messages$/).find((c) => JSON.stringify(c.body.components ?? []).includes(approval.approvalId))!;
    const button = post.body.components[0].components[0].custom_id as string;
    const press = JSON.stringify({ type: 3, id: '5500000000000000012', application_id: '3300000000000000001', token: 'itoken2', channel_id: '880000000000000001', user: { id: '4400000000000000002', username: 'erin' }, data: { custom_id: button, component_type: 2 } });
    expect(await web.post('discord', press, discordHeaders(press))).toEqual({ status: 200, body: { type: 6 } });
    expect(await s.rpc<{ status: string; response: string }>('agent.wait', { runId: await runOf(key) })).toMatchObject({ status: 'ok', response: expect.stringContaining('discord-dm') });
  });
});

function signedJson(body: string) {
  const ts = Math.floor(Date.now() / 1000);
  return { 'x-slack-request-timestamp': String(ts), 'x-slack-signature': `v0=${crypto.createHmac('sha256', SLACK_SECRET).update(`v0:${ts}:${body}`).digest('hex')}` };
}
