// An inbound channel message across a hard kill: SIGKILLed between its claim and its submit (or while a held message's
// pairing code was being sent), the platform's redelivery is accepted once.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { DEFAULT_TEST_DATABASE_URL } from '../testing/pg-test-db';
import { startChildServer, tmpDataDir, until } from '../testing/harness';
import { onPostgresPass } from '../testing/store-under-test';

const SECRET = 'crash-secret';

it('killed after the claim and before the submit: the redelivery gets 200 and one turn; another redelivery starts nothing', async () => {
  const dataDir = tmpDataDir();
  const configFile = path.join(dataDir, 'config.json');
  // No reply is sent anywhere that answers: the test looks at the turns only.
  fs.writeFileSync(configFile, JSON.stringify({ channels: { webhook: { url: 'http://127.0.0.1:9/out', secret: SECRET, dmPolicy: 'open', maxAttempts: 1 } } }));
  const env: Record<string, string> = onPostgresPass() ? { DATABASE_URL: process.env.TEST_DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL, CROSSTALK_TEST_PG_SCHEMA: `t_inkill_${crypto.randomBytes(4).toString('hex')}` } : {};
  const body = JSON.stringify({ from: 'killed-peer', text: 'said once', messageId: 'm-kill-1' });
  const post = (url: string) => {
    const ts = Math.floor(Date.now() / 1000);
    const sig = `sha256=${crypto.createHmac('sha256', SECRET).update(`${ts}.${body}`).digest('hex')}`;
    return fetch(`${url}/api/channels/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-crosstalk-timestamp': String(ts), 'x-crosstalk-signature': sig }, body });
  };

  const a = await startChildServer({ dataDir, configFile, env: { ...env, CROSSTALK_FAILPOINTS: 'inbound.claimed' } });
  await post(a.url).catch(() => undefined); // the connection dies with the process
  expect(await a.exited).toBe(137);

  const b = await startChildServer({ dataDir, configFile, env });
  try {
    // The platform retries until it is answered 2xx (PostgreSQL: 503 while the dead process still counts as alive).
    // Before: 200 at once and dropped, the claim the dead process left was taken for the message's.
    await until(async () => (await post(b.url)).status === 200, 60_000);
    const userRows = async () => (await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:webhook:direct:killed-peer' })).messages.filter((m) => m.role === 'user');
    expect((await userRows()).map((m) => m.content)).toEqual(['said once']);
    expect((await post(b.url)).status).toBe(200);
    expect(await userRows()).toHaveLength(1);
  } finally {
    b.kill();
    await b.exited;
  }
}, 120_000);

it('a held message (pairing) killed while its code was being sent: the redeliveries hold nothing more, and it runs once when approved', async () => {
  // Before: the hold was written, then the code sent (here: to a receiver that never answers), then the gate settled;
  // killed in between, each redelivery took the dead process's gate over and held the message again: two turns.
  const hang = http.createServer(() => undefined); // takes the code's POST and never answers
  await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
  const dataDir = tmpDataDir();
  const configFile = path.join(dataDir, 'config.json');
  const out = `http://127.0.0.1:${(hang.address() as AddressInfo).port}/out`;
  fs.writeFileSync(configFile, JSON.stringify({ channels: { webhook: { url: out, secret: SECRET, dmPolicy: 'pairing', maxAttempts: 1, timeoutMs: 20_000 } } }));
  const env: Record<string, string> = onPostgresPass() ? { DATABASE_URL: process.env.TEST_DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL, CROSSTALK_TEST_PG_SCHEMA: `t_inheld_${crypto.randomBytes(4).toString('hex')}` } : {};
  const body = JSON.stringify({ from: 'held-peer', text: '/reply held once', messageId: 'm-held-1' });
  const post = (url: string) => {
    const ts = Math.floor(Date.now() / 1000);
    const sig = `sha256=${crypto.createHmac('sha256', SECRET).update(`${ts}.${body}`).digest('hex')}`;
    return fetch(`${url}/api/channels/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-crosstalk-timestamp': String(ts), 'x-crosstalk-signature': sig }, body });
  };
  try {
    const a = await startChildServer({ dataDir, configFile, env });
    const posted = post(a.url).catch(() => undefined);
    // Held, and its code on the way (the receiver holds the POST): then the process dies.
    await until(async () => (await a.rpc<{ pairings: unknown[] }>('pairings.list', {})).pairings.length === 1, 20_000);
    await new Promise((r) => setTimeout(r, 300));
    a.kill();
    await a.exited;
    await posted;

    const b = await startChildServer({ dataDir, configFile, env });
    try {
      await until(async () => (await post(b.url)).status === 200, 60_000);
      expect((await post(b.url)).status).toBe(200);
      const [p] = (await b.rpc<{ pairings: Array<{ channel: string; code: string }> }>('pairings.list', {})).pairings;
      await b.rpc('pairings.resolve', { channel: p!.channel, code: p!.code, decision: 'approve' });
      const userRows = async () => (await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:webhook:direct:held-peer' })).messages.filter((m) => m.role === 'user');
      await until(async () => (await userRows()).length > 0, 20_000);
      await new Promise((r) => setTimeout(r, 500)); // a second held copy would run right behind the first
      expect((await userRows()).map((m) => m.content)).toEqual(['/reply held once']);
    } finally {
      b.kill();
      await b.exited;
    }
  } finally {
    hang.closeAllConnections();
    hang.close();
  }
}, 120_000);
