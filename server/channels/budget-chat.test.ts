// A budget item of a tree started from a chat (CONTRACT §5 budgets, README "Approvals in chat"): its card offers Allow
// once and Deny only, goes to the other approvers, and the sender whose message started the tree cannot raise its cap.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelsOf } from '../http/channel-inbound';
import { startTestServer, type TestServer, until } from '../testing/harness';
import type { ChannelService } from './index';
import { CREDS, FAKES } from './testing/fake-apis';
import { startFakePlatform, type FakePlatform } from './testing/fake-platform';
import { serveChannels } from './testing/serve-channels';
import { telegramUpdates } from './testing/telegram-updates';

const TG_SECRET = 'tg-secret-token';
const ALICE = 5150;
const BOB = 5151;

let s: TestServer;
let web: Awaited<ReturnType<typeof serveChannels>>;
let channels: ChannelService;
let tg: FakePlatform;

beforeAll(async () => {
  tg = await startFakePlatform(FAKES.telegram!.handler);
  s = await startTestServer({
    config: {
      agents: [{ id: 'main', budget: { tokens: 1 }, channelTools: { exec: 'auto' } }],
      channels: { telegram: { botToken: CREDS.telegramToken, webhookSecret: TG_SECRET, apiBaseUrl: tg.url, allowFrom: ['*'], approvers: [String(ALICE), String(BOB)] } },
    },
  });
  web = await serveChannels(s.rt);
  channels = channelsOf(s.rt);
});
afterAll(async () => {
  await channels?.idle();
  await web?.close();
  await s?.close();
  await tg?.close();
});

const headers = { 'x-telegram-bot-api-secret-token': TG_SECRET };
const updates = telegramUpdates();
const message = updates.message;
const press = (fromId: number, chatId: number, messageId: number, data: string) => updates.press(fromId, messageId, data, chatId);
const lastAnswer = () => tg.calls(/answerCallbackQuery$/).at(-1)?.body.text as string | undefined;

describe('a budget item from a chat', () => {
  it("goes to the other approvers with Allow once and Deny; the requester cannot decide it, nor anyone lift the cap from chat", async () => {
    const key = `agent:main:telegram:direct:${ALICE}`;
    await web.post('telegram', message(ALICE, '/tool exec {"command":"echo over-budget"}'), headers);
    const item = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals.find((a) => a.kind === 'budget'));
    const posts = ((await until(() => s.rt.store.getIdempotent(`chat-approval:${item.approvalId}`))) as { posts: Array<{ to: string; messageId: string }> }).posts;
    // To Bob only: Alice's own message started the tree (before: the item carried no trust, so it went to her too).
    expect(posts.map((p) => p.to)).toEqual([String(BOB)]);
    const card = tg.calls(/sendMessage$/).filter((c) => c.body.reply_markup).at(-1)!;
    const keyboard = card.body.reply_markup.inline_keyboard[0] as Array<{ text: string; callback_data: string }>;
    // Allow always would lift the cap for good: README "Budgets" keeps it to approvals.resolve.
    expect(keyboard.map((b) => b.text)).toEqual(['Allow once', 'Deny']);
    const allowOnce = keyboard[0]!.callback_data;
    const msg = Number(posts[0]!.messageId);

    // Alice presses in Bob's chat: her own message started the tree (before: accepted, the cap lifted).
    await web.post('telegram', press(ALICE, BOB, msg, allowOnce.replace(':a1:', ':aa:')), headers);
    await channels.idle();
    expect(lastAnswer()).toMatch(/your own message/);
    expect((await s.rt.store.getApproval(item.approvalId))?.status).toBe('pending');
    // Bob with a forged Allow always: refused too.
    await web.post('telegram', press(BOB, BOB, msg, allowOnce.replace(':a1:', ':aa:')), headers);
    await channels.idle();
    expect(lastAnswer()).toMatch(/Allow once or Deny/);
    expect((await s.rt.store.getApproval(item.approvalId))?.status).toBe('pending');
    // Bob allows once: the tree goes on.
    await web.post('telegram', press(BOB, BOB, msg, allowOnce), headers);
    await channels.idle();
    expect(await s.rt.store.getApproval(item.approvalId)).toMatchObject({ status: 'allowed', decision: 'allow_once' });
  });
});
