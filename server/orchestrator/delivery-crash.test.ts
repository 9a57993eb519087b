// Deliveries across a hard kill (CONTRACT §9): a process SIGKILLed between a delivery's steps resumes it after a restart, and never repeats it.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startChildServer, tmpDataDir, until } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
/** The store of both processes (the killed one and the one after it): SQLite restarted, or PostgreSQL taken over. */
const storeEnv = (store: string): Record<string, string> =>
  store === 'postgres' ? { DATABASE_URL: PG_URL, CROSSTALK_TEST_PG_SCHEMA: `t_dlvcrash_${process.pid}_${Math.random().toString(36).slice(2, 8)}`, CROSSTALK_PG_POOL: '4' } : {};

describe.each(['sqlite', 'postgres'])('deliveries across a hard kill on %s', (store) => {
  it('killed after the record is stored and before the target has it: the re-driven call finds its delivery, the target gets the message once, it is answered', async () => {
    const dataDir = tmpDataDir();
    const env = storeEnv(store);
    const a = await startChildServer({ dataDir, env: { ...env, CROSSTALK_FAILPOINTS: 'delivery.accepted' } });
    const { runId } = await a.rpc('agent', { sessionKey: 'agent:main:main', message: '/tool sessions_send {"sessionKey":"agent:researcher:main","message":"/reply 42"}' });
    expect(await a.exited).toBe(137);

    const b = await startChildServer({ dataDir, env });
    try {
      const w = await b.rpc<{ status: string; response: string }>('agent.wait', { runId, timeoutMs: 60_000 });
      expect(w.status).toBe('ok');
      const out = JSON.parse(w.response.replace(/^sessions_send: /, ''));
      expect(out).toMatchObject({ status: 'ok', response: '42', deliveryId: expect.stringMatching(/^dlv_/) });
      const all = (await b.rpc<{ deliveries: any[] }>('deliveries.list', { sessionKey: 'agent:researcher:main' })).deliveries;
      expect(all.map((d) => [d.deliveryId, d.kind, d.state])).toEqual([[out.deliveryId, 'session_message', 'answered']]);
      const target = (await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:researcher:main' })).messages;
      expect(target.filter((m) => m.kind === 'inter_session').length).toBe(1);
      expect(target.filter((m) => m.content === '42').length).toBe(1);
    } finally {
      b.kill();
      await b.exited;
    }
  }, 180_000);

  it('killed during channel sends (a `message` call, an unkeyed `send`, a run\'s reply to an inbound message): each record ends failed/interrupted, none stays accepted or is sent again', async () => {
    // The platform takes each request and never answers: the process dies with both calls in flight.
    const arrivals: string[] = [];
    const platform = http.createServer((req) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => arrivals.push(body));
    });
    await new Promise<void>((r) => platform.listen(0, '127.0.0.1', r));
    const dataDir = tmpDataDir();
    const env = storeEnv(store);
    const configFile = path.join(dataDir, 'config.json');
    const port = (platform.address() as { port: number }).port;
    fs.writeFileSync(configFile, JSON.stringify({ channels: { webhook: { url: `http://127.0.0.1:${port}/out`, secret: 'whsec', dmPolicy: 'open', timeoutMs: 120_000 } } }));
    const a = await startChildServer({ dataDir, configFile, env });
    const { runId } = await a.rpc('agent', { sessionKey: 'agent:main:main', message: '/tool message {"action":"send","channel":"webhook","to":"peer1","text":"from the tool"}' });
    void a.rpc('send', { channel: 'webhook', to: 'peer2', message: 'from send' }).catch(() => undefined);
    // A person's message in: its run's reply goes out to the platform, which holds it too.
    const inbound = JSON.stringify({ from: 'peer3', text: 'answer me', messageId: 'in-1' });
    const ts = Math.floor(Date.now() / 1000);
    const sig = `sha256=${crypto.createHmac('sha256', 'whsec').update(`${ts}.${inbound}`).digest('hex')}`;
    const posted = await fetch(`${a.url}/api/channels/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-crosstalk-timestamp': String(ts), 'x-crosstalk-signature': sig }, body: inbound });
    expect(posted.status).toBe(200);
    await until(() => arrivals.length >= 3, 30_000);
    a.kill();
    await a.exited;

    const b = await startChildServer({ dataDir, configFile, env });
    try {
      const w = await b.rpc<{ status: string; response: string }>('agent.wait', { runId, timeoutMs: 60_000 });
      expect(w.status).toBe('ok');
      expect(JSON.parse(w.response.replace(/^message: /, ''))).toMatchObject({ status: 'error', error: { code: 'interrupted' } });
      const closed = await until(async () => {
        const l = (await b.rpc<{ deliveries: any[] }>('deliveries.list', { kind: 'channel' })).deliveries;
        return l.length === 3 && l.every((d) => d.state === 'failed') ? l : null;
      }, 60_000);
      for (const d of closed) expect(d.error).toMatchObject({ code: 'interrupted' });
      expect(closed.map((d) => d.to.target).sort()).toEqual(['user:peer1', 'user:peer2', 'user:peer3']);
      expect(arrivals).toHaveLength(3);
    } finally {
      b.kill();
      await b.exited;
      platform.closeAllConnections();
      platform.close();
    }
  }, 180_000);

  it("killed between a run's reply row and its delivery record: the reply is sent once, by the restarted process (SQLite) or the one that finds it dead (PostgreSQL)", async () => {
    const arrivals: string[] = [];
    const platform = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        arrivals.push(body);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => platform.listen(0, '127.0.0.1', r));
    const dataDir = tmpDataDir();
    const env = storeEnv(store);
    const configFile = path.join(dataDir, 'config.json');
    const port = (platform.address() as { port: number }).port;
    fs.writeFileSync(configFile, JSON.stringify({ channels: { webhook: { url: `http://127.0.0.1:${port}/out`, secret: 'whsec', dmPolicy: 'open' } } }));
    const a = await startChildServer({ dataDir, configFile, env: { ...env, CROSSTALK_FAILPOINTS: 'reply.unrecorded' } });
    // PostgreSQL: a second process is up to find the first one dead (its own data dir).
    const other = store === 'postgres' ? await startChildServer({ dataDir: tmpDataDir(), configFile, env }) : null;
    let b: Awaited<ReturnType<typeof startChildServer>> | null = other;
    try {
      const inbound = JSON.stringify({ from: 'peer9', text: '/reply owed answer', messageId: 'in-owed' });
      const ts = Math.floor(Date.now() / 1000);
      const sig = `sha256=${crypto.createHmac('sha256', 'whsec').update(`${ts}.${inbound}`).digest('hex')}`;
      const posted = await fetch(`${a.url}/api/channels/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-crosstalk-timestamp': String(ts), 'x-crosstalk-signature': sig }, body: inbound });
      expect(posted.status).toBe(200);
      expect(await a.exited).toBe(137); // killed with the reply's row committed and no record of it
      expect(arrivals).toEqual([]);
      b ??= await startChildServer({ dataDir, configFile, env });
      // Before: nothing would ever send it (no record to retry or close), and the person never got an answer.
      await until(() => arrivals.length >= 1, 30_000);
      const reply = await until(async () => (await b!.rpc<{ deliveries: any[] }>('deliveries.list', { kind: 'channel' })).deliveries.find((d) => d.deliveryId.startsWith('dlv_reply_') && d.state === 'delivered'), 30_000);
      expect(reply).toMatchObject({ to: { target: 'user:peer9' } });
      expect(arrivals.map((x) => JSON.parse(x).text)).toEqual(['owed answer']);
      // Once: a later look (another death, a restart) finds it recorded.
      expect(await b.rpc('status', {})).toBeTruthy();
      await new Promise((r) => setTimeout(r, 500));
      expect(arrivals).toHaveLength(1);
    } finally {
      b?.kill();
      await b?.exited;
      platform.closeAllConnections();
      platform.close();
    }
  }, 180_000);

  it('killed right after the target answered and the callback was recorded: the callback delivery resumes to answered, its row written once', async () => {
    const dataDir = tmpDataDir();
    const env = storeEnv(store);
    const a = await startChildServer({ dataDir, env: { ...env, CROSSTALK_FAILPOINTS: 'callback.recorded' } });
    await a.rpc('agent', { sessionKey: 'agent:main:main', message: '/tool sessions_send {"sessionKey":"agent:researcher:main","message":"/reply 42","mode":"async"}' });
    expect(await a.exited).toBe(137);

    const b = await startChildServer({ dataDir, env });
    try {
      const list = async () => (await b.rpc<{ deliveries: any[] }>('deliveries.list', { sessionKey: 'agent:main:main' })).deliveries;
      const done = await until(async () => {
        const l = await list();
        return l.length === 2 && l.every((d) => d.state === 'answered') ? l : null;
      }, 60_000);
      expect(done.map((d) => d.kind).sort()).toEqual(['callback', 'session_message']);
      const main = (await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:main', limit: 50 })).messages;
      expect(main.filter((m) => m.kind === 'agent_callback_result').map((m) => m.meta.deliveryId)).toEqual([done.find((d) => d.kind === 'callback').deliveryId]);
    } finally {
      b.kill();
      await b.exited;
    }
  }, 180_000);
});
