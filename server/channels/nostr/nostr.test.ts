// Nostr delivery against a loopback relay speaking NIP-01 over WebSocket: signed NIP-04 DMs, OK/false reasons, retries.
import type { AddressInfo } from 'node:net';
import * as nip04 from 'nostr-tools/nip04';
import { generateSecretKey, getPublicKey, verifyEvent } from 'nostr-tools/pure';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { startTestServer, type TestServer } from '../../testing/harness';
import { createChannels, type ChannelService } from '../index';

const botSk = generateSecretKey();
const botPk = getPublicKey(botSk);
const userSk = generateSecretKey();
const userPk = getPublicKey(userSk);

let wss: WebSocketServer;
const events: any[] = [];
const answers: string[] = [];
let s: TestServer;
let channels: ChannelService;

beforeAll(async () => {
  wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => wss.on('listening', () => r()));
  wss.on('connection', (ws) =>
    ws.on('message', (data) => {
      const msg = JSON.parse(String(data));
      if (msg[0] !== 'EVENT') return;
      const ev = msg[1];
      events.push(ev);
      // a real relay checks the signature first
      if (!verifyEvent(ev)) return ws.send(JSON.stringify(['OK', ev.id, false, 'invalid: bad signature']));
      const reason = answers.shift();
      ws.send(JSON.stringify(reason ? ['OK', ev.id, false, reason] : ['OK', ev.id, true, '']));
    }),
  );
  const port = (wss.address() as AddressInfo).port;
  s = await startTestServer({
    config: { channels: { nostr: { privateKey: Buffer.from(botSk).toString('hex'), relays: [`ws://127.0.0.1:${port}`], timeoutMs: 3000 } } },
  });
  channels = createChannels({ config: s.rt.config, store: s.rt.store, bus: s.rt.bus, orchestrator: s.rt.orchestrator, log: s.rt.log });
});
afterAll(async () => {
  await new Promise((r) => setImmediate(r));
  await s?.close();
  for (const c of wss.clients) c.terminate();
  await new Promise((r) => wss.close(r));
});

const mirrors = async (key: string) => (await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: key }).catch(() => ({ messages: [] as any[] }))).messages;

describe('nostr delivery', () => {
  it('publishes a signed kind-4 event the recipient can decrypt, and mirrors into the recipient session', async () => {
    const res = await channels.send({ channel: 'nostr', to: userPk, message: 'hello on nostr' });
    expect(res.sessionKey).toBe(`agent:main:nostr:direct:${userPk}`);
    const ev = events.at(-1)!;
    expect(ev).toMatchObject({ kind: 4, pubkey: botPk, tags: [['p', userPk]], id: res.messageId });
    expect(nip04.decrypt(userSk, botPk, ev.content)).toBe('hello on nostr');
    expect((await mirrors(res.sessionKey)).map((m) => m.content)).toEqual(['hello on nostr']);
  });

  it('auth-required is a channel_error and nothing is mirrored', async () => {
    answers.push('auth-required: we only accept events from members');
    await expect(channels.send({ channel: 'nostr', to: userPk, message: 'members only' })).rejects.toMatchObject({ code: 'channel_error', message: expect.stringContaining('authentication failed') });
    expect((await mirrors(`agent:main:nostr:direct:${userPk}`)).map((m) => m.content)).not.toContain('members only');
  });

  it('rate-limited and error: are retried with the same event (relays drop duplicates)', async () => {
    answers.push('rate-limited: slow down', 'error: could not save');
    const before = events.length;
    const res = await channels.send({ channel: 'nostr', to: userPk, message: 'eventually' });
    const tries = events.slice(before);
    expect(tries).toHaveLength(3);
    expect(new Set(tries.map((e) => e.id))).toEqual(new Set([res.messageId]));
    expect((await mirrors(res.sessionKey)).filter((m) => m.content === 'eventually')).toHaveLength(1);
  });
});
