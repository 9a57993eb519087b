// Webhooks: signed POSTs from a durable outbox, retried with backoff through 500s, hangs, dropped sockets and downtime.
// On PostgreSQL the job engine (pg-boss) schedules them, and it counts retry delays in whole seconds (base 1 s,
// each failure at least doubling it): fewer failures there, the same assertions. server/jobs has the multi-process
// ones (exactly once across processes, a process killed mid-POST).
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { isPrivateAddress } from './guard';
import { onPostgresPass } from '../testing/store-under-test';

type Behaviour = 'ok' | '500' | 'hang' | 'close';
interface Receiver {
  url: string;
  port: number;
  hits: Array<{ body: string; signature?: string; ts?: string; at: number }>;
  behave: Behaviour[];
  close(): Promise<void>;
  listen(): Promise<void>;
}

async function receiver(port = 0): Promise<Receiver> {
  const r: Receiver = { url: '', port, hits: [], behave: [], close: async () => undefined, listen: async () => undefined };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const b = r.behave.shift() ?? 'ok';
      if (b === 'hang') return; // never answers
      if (b === 'close') return req.socket.destroy();
      r.hits.push({ body, signature: req.headers['x-crosstalk-signature'] as string | undefined, ts: req.headers['x-crosstalk-timestamp'] as string | undefined, at: Date.now() });
      res.writeHead(b === '500' ? 500 : 200).end();
    });
  });
  r.listen = () => new Promise((ok) => server.listen(r.port, '127.0.0.1', () => ((r.port = (server.address() as AddressInfo).port), (r.url = `http://127.0.0.1:${r.port}/hook`), ok())));
  r.close = () => new Promise((ok) => (server.closeAllConnections(), server.close(() => ok())));
  await r.listen();
  return r;
}

/** CONTRACT §5: the HMAC of "<X-Crosstalk-Timestamp>.<body>", stamped within 5 minutes of now. */
const sign = (hit: { body: string; ts?: string }, secret: string) => {
  expect(Math.abs(Number(hit.ts) - Date.now() / 1000)).toBeLessThanOrEqual(300);
  return `sha256=${crypto.createHmac('sha256', secret).update(`${hit.ts}.${hit.body}`).digest('hex')}`;
};

const PG = onPostgresPass();
/** The first retry's delay: `retryBaseMs` on SQLite; whole seconds (at least 1) on PostgreSQL's job engine. */
const BASE_MS = PG ? 1000 : 40;
const webhooks = { allowPrivateNetwork: true, retryBaseMs: 40, maxAttempts: 5, timeoutMs: 300 };

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ config: { webhooks } });
});
afterAll(async () => {
  await s?.close();
});


describe('webhooks', () => {
  it('the agent method with a webhook POSTs {runId, sessionKey, status, response}, signed', async () => {
    const rec = await receiver();
    try {
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:hook', message: '/reply 42', webhook: { url: rec.url, secret: 's3cret' } });
      await until(() => rec.hits.length === 1);
      const hit = rec.hits[0]!;
      expect(JSON.parse(hit.body)).toEqual({ runId, sessionKey: 'agent:main:hook', status: 'ok', response: '42' });
      expect(hit.signature).toBe(sign(hit, 's3cret'));
      await new Promise((r) => setTimeout(r, 150));
      expect(rec.hits.length).toBe(1);
    } finally {
      await rec.close();
    }
  });

  it('an agent caller gets both the callback turn and the webhook', async () => {
    const rec = await receiver();
    try {
      await s.rpc('agent', {
        sessionKey: 'agent:main:both',
        message: `/tool sessions_send {"sessionKey":"agent:researcher:both","message":"/reply 7","mode":"async","webhook":{"url":"${rec.url}"}}`,
      });
      await until(() => rec.hits.length === 1);
      expect(JSON.parse(rec.hits[0]!.body)).toMatchObject({ sessionKey: 'agent:researcher:both', status: 'ok', response: '7' });
      expect(rec.hits[0]!.signature).toBeUndefined();
      await until(async () => (await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:both' })).messages.some((m) => m.content === 'echo: 7'));
    } finally {
      await rec.close();
    }
  });

  it('retries through a 500, a hang and a closed socket, with doubling backoff, and delivers once', async () => {
    const rec = await receiver();
    const failures: Behaviour[] = PG ? ['500', 'close'] : ['500', 'hang', 'close'];
    rec.behave.push(...failures);
    try {
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:flaky', message: 'x', webhook: { url: rec.url } });
      await until(() => rec.hits.length >= 2, 20_000); // the 500 is recorded, then the final success
      await new Promise((r) => setTimeout(r, 200));
      const ok = rec.hits.filter((h) => JSON.parse(h.body).runId === runId);
      expect(ok.length).toBe(2); // one 500 (recorded) + one success
      const row = await s.rt.store.db.selectFrom('webhook_outbox').selectAll().where('run_id', '=', runId).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: 'delivered', attempts: failures.length + 1 });
      // Each failure waits at least twice as long as the one before: base + 2·base (+ 4·base).
      const minWait = failures.reduce((sum, _, i) => sum + BASE_MS * 2 ** i, 0);
      expect(ok[1]!.at - ok[0]!.at).toBeGreaterThanOrEqual(minWait - 20);
    } finally {
      await rec.close();
    }
  });

  it('a receiver that is down for a while gets the POST after it comes back', async () => {
    const rec = await receiver();
    await rec.close(); // down
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:down', message: 'y', webhook: { url: rec.url, secret: 'k' } });
    await until(async () => ((await s.rt.store.db.selectFrom('webhook_outbox').select('attempts').where('run_id', '=', runId).executeTakeFirst())?.attempts ?? 0) >= 2, 20_000);
    await rec.listen(); // back on the same port
    try {
      await until(() => rec.hits.length === 1, 20_000);
      expect(JSON.parse(rec.hits[0]!.body)).toMatchObject({ runId, status: 'ok', response: 'echo: y' });
      expect(rec.hits[0]!.signature).toBe(sign(rec.hits[0]!, 'k'));
    } finally {
      await rec.close();
    }
  });

  it('dead-letters after the last attempt, visibly', async () => {
    const rec = await receiver();
    // On PostgreSQL a server of its own with 3 attempts (1 s + 2 s of backoff, not 15 s).
    const attempts = PG ? 3 : 5;
    const srv = PG ? await startTestServer({ config: { webhooks: { ...webhooks, maxAttempts: attempts } } }) : s;
    rec.behave.push(...Array.from({ length: attempts + 1 }, (): Behaviour => '500'));
    try {
      const { runId } = await srv.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:dead', message: 'z', webhook: { url: rec.url } });
      const row = await until(async () => {
        const r = await srv.rt.store.db.selectFrom('webhook_outbox').selectAll().where('run_id', '=', runId).executeTakeFirst();
        return r?.status === 'dead' ? r : null;
      }, 20_000);
      expect(row).toMatchObject({ attempts, last_error: 'receiver answered 500' });
      const listed = await srv.rpc<{ webhooks: any[] }>('webhooks.list', { status: 'dead' });
      expect(listed.webhooks.find((w) => w.runId === runId)).toMatchObject({ status: 'dead', attempts, lastError: 'receiver answered 500' });
      const metrics = await (await fetch(`${srv.url}/api/metrics`, { headers: { authorization: 'Bearer test-token' } })).text();
      expect(metrics).toMatch(/crosstalk_webhook_attempts_total\{outcome="dead"\} [1-9]/);
      await new Promise((r) => setTimeout(r, 2 * BASE_MS)); // nothing after the last attempt
      expect(rec.behave.length).toBe(1);
    } finally {
      await rec.close();
      if (srv !== s) await srv.close();
    }
  });

  it('private and loopback addresses are recognised', () => {
    for (const ip of ['127.0.0.1', '10.1.2.3', '192.168.0.1', '172.20.0.1', '169.254.1.1', '::1', 'fd00::1', '::ffff:127.0.0.1', '0.0.0.0', '192.0.2.2', '198.51.100.7', '203.0.113.9', '192.0.0.8', '::ffff:192.0.2.2', 'fec0::1', '2001:2::1', '::ffff:0:c000:205', '::ffff:0:7f00:1', '3fff::1', '5f00::1', '2001:10::1', '2001:20::1']) expect(isPrivateAddress(ip), ip).toBe(true);
    for (const ip of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '192.0.3.1', '203.0.114.1', '2001:4860::8888', '2001:3::1']) expect(isPrivateAddress(ip), ip).toBe(false);
  });
});

describe('SSRF through a delivery', () => {
  it('a name that passes the URL check but resolves to loopback when the POST connects (DNS rebinding) is refused by the connection itself', async () => {
    const rec = await receiver();
    const srv = await startTestServer({ config: { webhooks: { ...webhooks, allowPrivateNetwork: false, maxAttempts: 1 } } });
    // The rebinding: every URL check (at `agent`, and before the POST) is answered with a public address for
    // "localhost"; the connection's own lookup sees the real one, 127.0.0.1.
    const promises = (await import('node:dns/promises')).default;
    const realLookup = promises.lookup;
    promises.lookup = (async (host: string, o: unknown) => (host === 'localhost' ? [{ address: '93.184.216.34', family: 4 }] : realLookup(host, o as never))) as typeof promises.lookup;
    try {
      const url = `http://localhost:${rec.port}/hook`;
      const { runId } = await srv.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:rebind', message: 'x', webhook: { url, secret: 'k' } });
      const row = await until(async () => {
        const r = await srv.rt.store.db.selectFrom('webhook_outbox').selectAll().where('run_id', '=', runId).executeTakeFirst();
        return r && r.status !== 'pending' ? r : null;
      }, 20_000);
      expect(row).toMatchObject({ status: 'dead', attempts: 1 });
      expect(row.last_error).toMatch(/EPRIVATEADDR|private or loopback/);
      expect(rec.hits).toEqual([]);
    } finally {
      promises.lookup = realLookup;
      await srv.close();
      await rec.close();
    }
  });
});

describe('a slow receiver', () => {
  it('holds up no other webhook: one to a receiver that answers at once goes out while the slow one is still waiting', async () => {
    // Its own server: attempts may take 8 s here (the suite's other server times them out at 300 ms).
    const own = await startTestServer({ config: { webhooks: { ...webhooks, timeoutMs: 8_000 } } });
    const held: http.ServerResponse[] = [];
    const arrived: string[] = [];
    const rec = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        arrived.push(req.url!);
        if (req.url === '/slow') held.push(res);
        else res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => rec.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(rec.address() as AddressInfo).port}`;
    try {
      await own.rpc('agent', { sessionKey: 'agent:main:hook-slow', message: 's', webhook: { url: `${base}/slow` } });
      await until(() => held.length === 1, 20_000);
      await own.rpc('agent', { sessionKey: 'agent:main:hook-quick', message: 'q', webhook: { url: `${base}/ok` } });
      // Before (SQLite): the quick one waited for the slow attempt's end (here its 8 s timeout).
      await until(() => arrived.includes('/ok'), 5_000);
      expect(held[0]!.writableEnded).toBe(false);
    } finally {
      for (const res of held) res.writeHead(200).end();
      rec.closeAllConnections();
      await new Promise((r) => rec.close(r));
      await own.close();
    }
  });
});
