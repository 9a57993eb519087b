// `send` over JSON-RPC and the `message` tool through the real run loop, once channels are wired into the runtime.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDS, FAKES } from './testing/fake-apis';
import { type FakePlatform, startFakePlatform } from './testing/fake-platform';
import { startTestServer, type TestServer } from '../testing/harness';

let s: TestServer;
let tg: FakePlatform;
let hook: FakePlatform;
beforeAll(async () => {
  tg = await startFakePlatform(FAKES.telegram!.handler);
  hook = await startFakePlatform(FAKES.webhook!.handler);
  s = await startTestServer({ config: { channels: { telegram: { botToken: CREDS.telegramToken, apiBaseUrl: tg.url }, webhook: { url: `${hook.url}/hook`, retryBaseMs: 5 } } } });
});
afterAll(async () => {
  await s?.close();
  await tg?.close();
  await hook?.close();
});

const rows = async (sessionKey: string) => (await s.rpc<{ messages: any[] }>('chat.history', { sessionKey, limit: 100 })).messages.reverse();

describe('send and message through the gateway', () => {
  it('send with no sessionKey derives the Telegram topic session, delivers, and mirrors', async () => {
    const r = await s.rpc<{ messageId: string; sessionKey: string }>('send', { channel: 'telegram', to: '-100123', threadId: '42', message: 'hi' });
    expect(r.sessionKey).toBe('agent:main:telegram:group:-100123:topic:42');
    expect(tg.requests.some((q) => q.path.endsWith('/sendMessage') && String(q.body.chat_id) === '-100123' && q.body.text === 'hi')).toBe(true);
    const h = await rows(r.sessionKey);
    expect(h).toEqual([expect.objectContaining({ role: 'assistant', kind: 'mirror', content: 'hi' })]);
    const bad = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'send', params: { channel: 'carrier-pigeon', to: 'x', message: 'x' } });
    expect(bad.body.error.data.code).toBe('unknown_channel');
    // A target the channel cannot take names the field, as every -32602 does (probe S: no data.issues).
    const badTarget = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'send', params: { channel: 'telegram', to: 'has space', message: 'x' } });
    expect(badTarget.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request', issues: [{ path: 'to', message: expect.stringContaining('has space') }] } });
  });

  it('a keyed send whose key is not ASCII reaches the webhook channel once: the header carries it percent-encoded (probe S)', async () => {
    // Before: every attempt failed in fetch ("Cannot convert argument to a ByteString"), and the delivery ended dead.
    const key = 'ключ-1 ✓';
    const r = await s.rpc<{ messageId: string }>('send', { channel: 'webhook', to: 'user:u9', message: 'привет', idempotencyKey: key });
    const again = await s.rpc<{ messageId: string }>('send', { channel: 'webhook', to: 'user:u9', message: 'привет', idempotencyKey: key });
    expect(again.messageId).toBe(r.messageId);
    const posts = hook.requests.filter((q) => q.path === '/hook' && q.body.text === 'привет');
    expect(posts.length).toBe(1);
    expect(decodeURIComponent(String(posts[0]!.headers['idempotency-key']))).toBe(posts[0]!.body.id);
    expect(posts[0]!.body.id).toContain(key);
  });

  it('the message tool mirrors into the target session, never the sender’s, and counts the outbound budget', async () => {
    const lines = Array.from({ length: 11 }, (_, i) => `/tool message {"action":"send","channel":"telegram","to":"4242","text":"m${i}"}`).join('\n');
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:main', message: `${lines}\n/silent` });
    expect((await s.rpc<{ status: string }>('agent.wait', { runId })).status).toBe('ok');
    const target = await rows('agent:main:telegram:direct:4242');
    expect(target.filter((m) => m.kind === 'mirror').length).toBe(10);
    expect(target.every((m) => m.runId === runId)).toBe(true);
    const own = (await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:main', includeTools: true, limit: 100 })).messages;
    expect(own.some((m) => m.kind === 'mirror')).toBe(false);
    const results = own.filter((m) => m.kind === 'tool_result').map((m) => m.tool.result);
    expect(results.filter((x) => x.status === 'error' && x.error.code === 'rate_limited').length).toBe(1);
  });
});
