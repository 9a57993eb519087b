// MCP elicitation in chat approvals, against the loopback Telegram fake: a one-boolean question gets Yes / No / Decline
// buttons, an approver's press answers the server exactly; a larger form points to the room.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelsOf } from '../http/channel-inbound';
import { readSse, startTestServer, type TestServer, until } from '../testing/harness';
import type { ChannelService } from './index';
import { elicitationRequest } from './elicitation-chat';
import { CREDS, FAKES } from './testing/fake-apis';
import { startFakePlatform, type FakePlatform } from './testing/fake-platform';
import { serveChannels } from './testing/serve-channels';
import { telegramUpdates } from './testing/telegram-updates';

const STDIO_SERVER = path.join(import.meta.dirname, '..', 'mcp', 'testing', 'stdio-server.mjs');
const TG_SECRET = 'tg-secret-token';
const ALICE = 5150; // approver
const MALLORY = 6666; // the sender whose message starts the call
const tgHeaders = { 'x-telegram-bot-api-secret-token': TG_SECRET };

let s: TestServer;
let web: Awaited<ReturnType<typeof serveChannels>>;
let channels: ChannelService;
let tg: FakePlatform;

beforeAll(async () => {
  tg = await startFakePlatform(FAKES.telegram!.handler);
  s = await startTestServer({
    config: {
      agents: [{ id: 'main', channelTools: { mcp__files__confirm: 'auto' } }],
      channels: { telegram: { botToken: CREDS.telegramToken, webhookSecret: TG_SECRET, apiBaseUrl: tg.url, allowFrom: ['*'], approvers: [String(ALICE)] } },
      mcp: { servers: { files: { command: process.execPath, args: [STDIO_SERVER] } } },
    },
  });
  await s.rt.mcp.ready();
  web = await serveChannels(s.rt);
  channels = channelsOf(s.rt);
});
afterAll(async () => {
  await channels?.idle();
  await web?.close();
  await s?.close();
  await tg?.close();
});

const { message: tgMessage, press } = telegramUpdates();

describe('elicitation in chat approvals', () => {
  it('a one-boolean question: Yes / No / Decline buttons; the approver’s Yes reaches the server as accept {sure: true}', async () => {
    const key = `agent:main:telegram:direct:${MALLORY}`;
    expect((await web.post('telegram', tgMessage(MALLORY, '/tool mcp__files__confirm {}'), tgHeaders)).status).toBe(200);
    const item = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals.find((a) => a.kind === 'elicitation'));
    const card = await until(() => tg.calls(/sendMessage$/).find((c) => c.body.reply_markup && JSON.stringify(c.body.reply_markup).includes(item.approvalId)));
    expect(card.body.chat_id).toBe(ALICE);
    expect(card.body.text).toContain('Really do it?');
    const keyboard = card.body.reply_markup.inline_keyboard[0] as Array<{ text: string; callback_data: string }>;
    expect(keyboard.map((b) => b.text)).toEqual(['Yes', 'No', 'Decline']);
    const posted = (await until(() => s.rt.store.getIdempotent(`chat-approval:${item.approvalId}`))) as { posts: Array<{ messageId: string }> };
    expect((await web.post('telegram', press(ALICE, Number(posted.posts[0]!.messageId), keyboard[0]!.callback_data), tgHeaders)).status).toBe(200);
    await channels.idle();
    const done = await s.rpc<{ status: string; response: string }>('agent.wait', { runId: item.runId, timeoutMs: 20_000 });
    expect(done.response).toContain('answer {\\"action\\":\\"accept\\",\\"content\\":{\\"sure\\":true}}');
    expect(await s.rt.store.getApproval(item.approvalId)).toMatchObject({ status: 'allowed', decision: 'accept' });
  });

  it('a decline pressed on a tool call (a tampered button: tool cards have none) is answered in the chat; the call stays pending', async () => {
    const key = `agent:main:telegram:direct:${MALLORY}`;
    expect((await web.post('telegram', tgMessage(MALLORY, '/tool exec {"command":"echo x"}'), tgHeaders)).status).toBe(200);
    const item = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals.find((a) => a.kind === 'tool'));
    const posted = (await until(() => s.rt.store.getIdempotent(`chat-approval:${item.approvalId}`))) as { posts: Array<{ messageId: string }> };
    const answers = tg.calls(/answerCallbackQuery$/).length;
    expect((await web.post('telegram', press(ALICE, Number(posted.posts[0]!.messageId), `ct:ex:${item.approvalId}`), tgHeaders)).status).toBe(200);
    await channels.idle();
    // Answered (the button's spinner ends) with why, instead of an error in the log and no answer.
    const told = await until(() => tg.calls(/answerCallbackQuery$/).slice(answers)[0]);
    expect(JSON.stringify(told.body)).toContain('does not fit');
    expect(await s.rt.store.getApproval(item.approvalId)).toMatchObject({ status: 'pending' });
    await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'deny' });
  });

  it('an approver whose own message started the call gets no card of its question and cannot answer it (the item carries the run’s trust)', async () => {
    const key = `agent:main:telegram:direct:${ALICE}`;
    expect((await web.post('telegram', tgMessage(ALICE, '/tool mcp__files__confirm {}'), tgHeaders)).status).toBe(200);
    const item = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.inbox', { sessionKey: key })).approvals.find((a) => a.kind === 'elicitation'));
    expect(item.trust).toEqual({ kind: 'channel', channel: 'telegram', peer: String(ALICE) });
    const evs = await readSse(`${s.url}/api/gateway/events?runId=${item.runId}`, { lastEventId: 0, until: (e) => e.some((x) => x.stream === 'approval' && x.data.approvalId === item.approvalId) });
    expect(evs.find((e) => e.stream === 'approval' && e.data.approvalId === item.approvalId)?.data.trust).toEqual({ kind: 'channel', channel: 'telegram', peer: String(ALICE) });
    await channels.idle();
    // Before, the item had no trust (read as the operator's): its card went to the requester, whose Yes was taken.
    expect(tg.calls(/sendMessage$/).filter((c) => JSON.stringify(c.body.reply_markup ?? '').includes(item.approvalId) && c.body.chat_id === ALICE)).toEqual([]);
    const answers = tg.calls(/answerCallbackQuery$/).length;
    expect((await web.post('telegram', press(ALICE, 1, `ct:e0:${item.approvalId}`), tgHeaders)).status).toBe(200);
    await channels.idle();
    await until(() => tg.calls(/answerCallbackQuery$/).slice(answers)[0]);
    expect(await s.rt.store.getApproval(item.approvalId)).toMatchObject({ status: 'pending' });
    await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'decline' });
  });

  it('a larger form (or a URL) is answered in the room: the chat only offers Decline', () => {
    const many = elicitationRequest('agent:main:main', { server: 'x', message: 'Tell me', requestedSchema: { properties: { a: { type: 'string' }, b: { type: 'string' } } } });
    expect(many.buttons.map((b) => b.label)).toEqual(['Decline']);
    expect(many.text).toContain('Answer it in the crosstalk room');
    const pick = elicitationRequest('agent:main:main', { message: 'Pick', requestedSchema: { properties: { c: { type: 'string', oneOf: [{ const: 'r', title: 'Red' }, { const: 'g', title: 'Green' }] } as never } } });
    expect(pick.buttons.map((b) => [b.label, b.code])).toEqual([['Red', 'e0'], ['Green', 'e1'], ['Decline', 'ex']]);
    expect(elicitationRequest('k', { mode: 'url', message: 'Open' }).buttons.map((b) => b.code)).toEqual(['ex']);
  });
});
