// Each delivery adapter against a loopback fake of its platform's API: request format, mirror, 401, 429 retry-after, 5xx.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { createChannels, type ChannelService } from './index';
import { CREDS, FAKES } from './testing/fake-apis';
import { startFakePlatform, type FakePlatform, type FakeRequest } from './testing/fake-platform';

interface Case {
  channel: string;
  fake: string;
  config: (url: string) => Record<string, unknown>;
  to: string;
  threadId?: string;
  key: string;
  /** The request that posts the message. */
  post: RegExp;
  check: (req: FakeRequest, text: string) => void;
  /** A 5xx may be retried: the request carries a transaction or idempotency id. */
  safe5xx: boolean;
}

const CASES: Case[] = [
  {
    channel: 'slack',
    fake: 'slack',
    config: (u) => ({ botToken: CREDS.slackToken, apiBaseUrl: `${u}/api/` }),
    to: 'C0ABC',
    threadId: '1700000000.000100',
    key: 'agent:main:slack:channel:c0abc:thread:1700000000.000100',
    post: /^\/api\/chat\.postMessage$/,
    check: (r, text) => {
      expect(r.headers.authorization).toBe(`Bearer ${CREDS.slackToken}`);
      expect(r.body).toMatchObject({ channel: 'C0ABC', text, thread_ts: '1700000000.000100' });
    },
    safe5xx: false,
  },
  {
    channel: 'telegram',
    fake: 'telegram',
    config: (u) => ({ botToken: CREDS.telegramToken, apiBaseUrl: u }),
    to: '-100123',
    threadId: '42',
    key: 'agent:main:telegram:group:-100123:topic:42',
    post: /\/sendMessage$/,
    check: (r, text) => {
      expect(r.path).toBe(`/bot${CREDS.telegramToken}/sendMessage`);
      expect(r.body).toMatchObject({ chat_id: -100123, text, message_thread_id: 42 });
    },
    safe5xx: false,
  },
  {
    channel: 'discord',
    fake: 'discord',
    config: (u) => ({ botToken: CREDS.discordToken, apiBaseUrl: `${u}/api` }),
    to: 'channel:123456789012345678',
    threadId: '223456789012345678',
    key: 'agent:main:discord:channel:223456789012345678',
    post: /^\/api\/v10\/channels\/\d+\/messages$/,
    check: (r, text) => {
      expect(r.path).toBe('/api/v10/channels/223456789012345678/messages');
      expect(r.headers.authorization).toBe(`Bot ${CREDS.discordToken}`);
      expect(r.body).toEqual({ content: text, allowed_mentions: { parse: ['users'] } });
    },
    safe5xx: false,
  },
  {
    channel: 'matrix',
    fake: 'matrix',
    config: (u) => ({ accessToken: CREDS.matrixToken, apiBaseUrl: u, retryBaseMs: 5 }),
    to: '!room1:example.org',
    threadId: '$root1',
    // Ids with characters a key cannot hold get their hash (routing.ts keyPart): one key per id.
    key: 'agent:main:matrix:group:room1:example.org:thread:-root1.62e17cecb14d',
    post: /\/send\/m\.room\.message\//,
    check: (r, text) => {
      expect(r.method).toBe('PUT');
      expect(r.path).toMatch(/^\/_matrix\/client\/v3\/rooms\/!room1%3Aexample\.org\/send\/m\.room\.message\/send-|^\/_matrix\/client\/v3\/rooms\/!room1%3Aexample\.org\/send\/m\.room\.message\/ct-/);
      expect(r.body).toMatchObject({ msgtype: 'm.text', body: text, 'm.relates_to': { rel_type: 'm.thread', event_id: '$root1' } });
    },
    safe5xx: true,
  },
  {
    channel: 'msteams',
    fake: 'msteams',
    config: (u) => ({ appId: CREDS.teamsId, appPassword: CREDS.teamsPassword, apiBaseUrl: u, tokenUrl: `${u}/token` }),
    to: '19:abc@thread.tacv2',
    threadId: '1700000000123',
    key: 'agent:main:msteams:channel:19:abc-thread.tacv2.b09250f01a4a:thread:1700000000123',
    post: /\/activities/,
    check: (r, text) => {
      expect(decodeURIComponent(r.path)).toBe('/v3/conversations/19:abc@thread.tacv2;messageid=1700000000123/activities');
      expect(r.body).toMatchObject({ type: 'message', text });
    },
    safe5xx: false,
  },
  {
    channel: 'mattermost',
    fake: 'mattermost',
    config: (u) => ({ botToken: CREDS.mattermostToken, apiBaseUrl: u }),
    to: '@Alice',
    key: 'agent:main:mattermost:direct:alice',
    post: /^\/api\/v4\/posts$/,
    check: (r, text) => expect(r.body).toEqual({ channel_id: 'dmchannel00000000000000000', message: text }),
    safe5xx: false,
  },
  {
    channel: 'bluebubbles',
    fake: 'bluebubbles',
    config: (u) => ({ password: CREDS.bluebubblesPassword, apiBaseUrl: u }),
    to: 'chat_guid:iMessage;+;chat123456',
    key: 'agent:main:bluebubbles:group:chat123456',
    post: /^\/api\/v1\/message\/text$/,
    check: (r, text) => expect(r.body).toMatchObject({ chatGuid: 'iMessage;+;chat123456', message: text, method: 'apple-script' }),
    safe5xx: false,
  },
  {
    channel: 'nextcloud-talk',
    fake: 'nextcloud-talk',
    config: (u) => ({ username: CREDS.talkUser, appPassword: CREDS.talkPassword, apiBaseUrl: u }),
    to: 'room:abcd1234',
    key: 'agent:main:nextcloud-talk:group:abcd1234',
    post: /\/api\/v1\/chat\//,
    check: (r, text) => {
      expect(r.path).toBe('/ocs/v2.php/apps/spreed/api/v1/chat/abcd1234');
      expect(r.body).toMatchObject({ message: text });
      expect(r.body.referenceId).toMatch(/^[0-9a-f]{64}$/);
    },
    safe5xx: false,
  },
  {
    channel: 'zalo',
    fake: 'zalo',
    config: (u) => ({ botToken: CREDS.zaloToken, apiBaseUrl: u }),
    to: '12345',
    key: 'agent:main:zalo:direct:12345',
    post: /\/sendMessage$/,
    check: (r, text) => expect(r.body).toEqual({ chat_id: '12345', text }),
    safe5xx: false,
  },
  {
    channel: 'tlon',
    fake: 'tlon',
    config: (u) => ({ ship: '~zod', code: CREDS.tlonCode, apiBaseUrl: u }),
    to: '~bus',
    key: 'agent:main:tlon:direct:bus',
    post: /^\/~\/channel\//,
    check: (r, text) => {
      expect(r.body[0]).toMatchObject({ action: 'poke', ship: 'zod', app: 'chat', mark: 'chat-dm-action', json: { ship: '~bus' } });
      expect(r.body[0].json.diff.delta.add.memo.content).toEqual([{ inline: [text] }]);
    },
    safe5xx: false,
  },
  {
    channel: 'webhook',
    fake: 'webhook',
    config: (u) => ({ url: `${u}/hook`, secret: 'whsec', retryBaseMs: 5 }),
    to: 'user:u1',
    key: 'agent:main:webhook:direct:u1',
    post: /^\/hook$/,
    check: (r, text) => {
      expect(r.body).toMatchObject({ channel: 'webhook', to: 'user:u1', chatType: 'direct', text });
      expect(r.headers['x-crosstalk-signature']).toBe(`sha256=${crypto.createHmac('sha256', 'whsec').update(`${r.headers['x-crosstalk-timestamp']}.${r.raw}`).digest('hex')}`);
      expect(r.headers['idempotency-key']).toBe(r.body.id);
    },
    safe5xx: true,
  },
  {
    channel: 'voice',
    fake: 'webhook',
    config: (u) => ({ url: `${u}/speak`, retryBaseMs: 5 }),
    to: '+1 (555) 123-4567',
    key: 'agent:main:voice:direct:+15551234567',
    post: /^\/speak$/,
    check: (r, text) => expect(r.body).toMatchObject({ channel: 'voice', to: '+15551234567', text }),
    safe5xx: true,
  },
];

let s: TestServer;
let channels: ChannelService;
const fakes = new Map<string, FakePlatform>();

beforeAll(async () => {
  const config: Record<string, Record<string, unknown>> = {};
  for (const c of CASES) {
    const f = await startFakePlatform(FAKES[c.fake]!.handler);
    fakes.set(c.channel, f);
    config[c.channel] = c.config(f.url);
  }
  // A second telegram account with a wrong token: a real 401 from the fake, not a queued one.
  config.telegram!.accounts = { broken: { botToken: '999:WRONG' } };
  s = await startTestServer({ config: { channels: config } });
  channels = createChannels({ config: s.rt.config, store: s.rt.store, bus: s.rt.bus, orchestrator: s.rt.orchestrator, log: s.rt.log });
});
afterAll(async () => {
  // EventBus.drain spins in microtasks while a flush is scheduled but nothing is pending: let the scheduled flush run first.
  await new Promise((r) => setImmediate(r));
  await s?.close();
  for (const f of fakes.values()) await f.close();
});

async function mirrors(sessionKey: string, text: string): Promise<any[]> {
  const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey, limit: 200 }).catch(() => ({ messages: [] }));
  return h.messages.filter((m) => m.kind === 'mirror' && m.content === text);
}

const send = (c: Case, text: string) => channels.send({ channel: c.channel, to: c.to, message: text, ...(c.threadId ? { threadId: c.threadId } : {}) });

describe.each(CASES)('$channel delivery', (c) => {
  it('posts in the platform format, returns the derived key and mirrors into it', async () => {
    const f = fakes.get(c.channel)!;
    const before = f.calls(c.post).length;
    const text = `hello over ${c.channel}`;
    const res = await send(c, text);
    expect(res.sessionKey).toBe(c.key);
    expect(res.messageId).toBeTruthy();
    const posts = f.calls(c.post).slice(before);
    expect(posts).toHaveLength(1);
    c.check(posts[0]!, text);
    const rows = await mirrors(c.key, text);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ role: 'assistant', kind: 'mirror', author: { type: 'agent', id: 'main' }, meta: { channel: c.channel, messageId: res.messageId } });
  });

  it('401 is a channel_error naming the authentication failure, and nothing is mirrored', async () => {
    const f = fakes.get(c.channel)!;
    f.enqueue({ ...FAKES[c.fake]!.unauthorized, match: c.post });
    const before = f.calls(c.post).length;
    const text = `unauthorized on ${c.channel}`;
    await expect(send(c, text)).rejects.toMatchObject({ code: 'channel_error', message: expect.stringMatching(/authentication failed/) });
    expect(f.calls(c.post).length - before).toBe(1); // never retried
    expect(await mirrors(c.key, text)).toHaveLength(0);
  });

  it('429 with retry-after is waited out and retried, then mirrored once', async () => {
    const f = fakes.get(c.channel)!;
    f.enqueue({ ...FAKES[c.fake]!.rateLimited, match: c.post });
    const before = f.calls(c.post).length;
    const text = `rate limited on ${c.channel}`;
    const res = await send(c, text);
    expect(res.sessionKey).toBe(c.key);
    expect(f.calls(c.post).length - before).toBe(2);
    expect(await mirrors(c.key, text)).toHaveLength(1);
  });

  it(c.safe5xx ? '5xx is retried (the request is idempotent) and delivered once' : '5xx is a clear channel_error, not retried (a retry could post twice), nothing mirrored', async () => {
    const f = fakes.get(c.channel)!;
    f.enqueue({ ...FAKES[c.fake]!.serverError, match: c.post });
    const before = f.calls(c.post).length;
    const text = `server error on ${c.channel}`;
    if (c.safe5xx) {
      await send(c, text);
      const posts = f.calls(c.post).slice(before);
      expect(posts).toHaveLength(2);
      // the same transaction / idempotency id both times
      expect(posts[0]!.path + (posts[0]!.headers['idempotency-key'] ?? '')).toBe(posts[1]!.path + (posts[1]!.headers['idempotency-key'] ?? ''));
      expect(await mirrors(c.key, text)).toHaveLength(1);
    } else {
      await expect(send(c, text)).rejects.toMatchObject({ code: 'channel_error', message: expect.stringMatching(/server error|HTTP 5\d\d|Bad Gateway|failed/i) });
      expect(f.calls(c.post).length - before).toBe(1);
      expect(await mirrors(c.key, text)).toHaveLength(0);
    }
  });

  it.runIf(c.safe5xx)('a send gone dead and retried (deliveries.retry) goes out under the key of its attempts', async () => {
    const f = fakes.get(c.channel)!;
    for (let i = 0; i < 3; i++) f.enqueue({ ...FAKES[c.fake]!.serverError, match: c.post });
    const before = f.calls(c.post).length;
    const text = `dead then retried on ${c.channel}`;
    await expect(send(c, text)).rejects.toMatchObject({ code: 'channel_error' });
    const [d] = (await s.rpc<{ deliveries: any[] }>('deliveries.list', { kind: 'channel', state: 'dead', limit: 1 })).deliveries;
    expect(d).toMatchObject({ state: 'dead', attempts: 3 });
    await s.rpc('deliveries.retry', { deliveryId: d.deliveryId });
    await until(() => f.calls(c.post).length - before === 4);
    const keys = f.calls(c.post).slice(before).map((p) => p.path + (p.headers['idempotency-key'] ?? ''));
    expect(new Set(keys).size).toBe(1);
    await until(async () => (await mirrors(c.key, text)).length === 1);
  });
});

describe('delivery failures', () => {
  it('a real wrong token (telegram account "broken") is a 401 channel_error and creates no session', async () => {
    await expect(channels.send({ channel: 'telegram', to: '4242', accountId: 'broken', message: 'nope' })).rejects.toMatchObject({
      code: 'channel_error',
      message: expect.stringContaining('Unauthorized'),
    });
    expect(await s.rt.store.getSession('agent:main:telegram:direct:4242')).toBeUndefined();
  });

  it('a 429 asking for longer than maxRetryAfterMs fails at once with the wait in the message', async () => {
    const f = fakes.get('telegram')!;
    f.enqueue({ status: 429, body: { ok: false, error_code: 429, description: 'Too Many Requests: retry after 3600', parameters: { retry_after: 3600 } }, match: /sendMessage/ });
    const t0 = Date.now();
    await expect(channels.send({ channel: 'telegram', to: '777', message: 'later' })).rejects.toMatchObject({ code: 'channel_error', message: expect.stringContaining('retry after 3600s') });
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('repeated 429s give up after maxAttempts', async () => {
    const f = fakes.get('msteams')!;
    const rl = FAKES.msteams!.rateLimited;
    f.enqueue({ ...rl, match: /activities/ }, { ...rl, match: /activities/ }, { ...rl, match: /activities/ });
    const before = f.calls(/activities/).length;
    await expect(channels.send({ channel: 'msteams', to: '19:abc@thread.tacv2', message: 'again' })).rejects.toMatchObject({ code: 'channel_error', message: expect.stringContaining('gave up after 3 attempts') });
    expect(f.calls(/activities/).length - before).toBe(3);
  });

  it('zalouser routes and resolves its session but delivery says there is no public API; nothing mirrored', async () => {
    const { route } = channels.resolveRoute({ agentId: 'main', channel: 'zalouser', to: '8800123' });
    expect(route.sessionKey).toBe('agent:main:zalouser:direct:8800123');
    await expect(channels.send({ channel: 'zalouser', to: '8800123', message: 'hi' })).rejects.toMatchObject({ code: 'channel_error', message: expect.stringContaining('no public API') });
    expect(await mirrors('agent:main:zalouser:direct:8800123', 'hi')).toHaveLength(0);
  });

  it('an unconfigured channel is a channel_error naming the config key', async () => {
    await expect(channels.send({ channel: 'nostr', to: 'f'.repeat(64), message: 'hi' })).rejects.toMatchObject({ code: 'channel_error', message: expect.stringContaining('config.channels.nostr') });
  });

  it('the matrix DM path finds no m.direct room, creates one, records it, and reuses it next time', async () => {
    const f = fakes.get('matrix')!;
    const before = f.requests.length;
    const a = await channels.send({ channel: 'matrix', to: '@bob:example.org', message: 'dm one' });
    expect(a.sessionKey).toBe('agent:main:matrix:direct:bob:example.org');
    await channels.send({ channel: 'matrix', to: 'user:@bob:example.org', message: 'dm two' });
    const reqs = f.requests.slice(before).map((r) => `${r.method} ${decodeURIComponent(r.path)}`);
    expect(reqs.filter((r) => r.includes('createRoom'))).toHaveLength(1);
    expect(reqs.filter((r) => r.startsWith('PUT /_matrix/client/v3/rooms/!dm1:example.org/send/'))).toHaveLength(2);
    const put = f.requests.slice(before).find((r) => r.method === 'PUT' && r.path.endsWith('m.direct'))!;
    expect(put.body).toEqual({ '@bob:example.org': ['!dm1:example.org'] });
  });
});
