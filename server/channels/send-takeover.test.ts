// Channel sends across a hard kill (CONTRACT §9 `channel`): one whose process died while it waited to retry is sent again
// by the process that takes over (no call of it was out: nothing doubles), and an attempt lost with its process counts.
// SQLite: the process restarted on the same data dir; PostgreSQL: another process, running all along, finds it dead.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { expect, it } from 'vitest';
import { startChildServer, tmpDataDir, until } from '../testing/harness';
import { DEFAULT_TEST_DATABASE_URL } from '../testing/pg-test-db';
import { onPostgresPass } from '../testing/store-under-test';

type Child = Awaited<ReturnType<typeof startChildServer>>;
interface Post {
  key: string;
  to: string;
  text: string;
}

/**
 * The platform (the generic webhook channel's receiver): `first(key)` says how a message's first POST is answered
 * (`hold`: never); every later POST of it gets 200.
 */
async function platform(first: (key: string) => { status: number; headers?: Record<string, string> } | 'hold') {
  const posts: Post[] = [];
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const key = String(req.headers['idempotency-key']);
      const { to, text } = JSON.parse(body) as { to: string; text: string };
      const again = posts.some((p) => p.key === key);
      posts.push({ key, to, text });
      const answer = again ? { status: 200 } : first(key);
      if (answer === 'hold') return;
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(JSON.stringify({ id: `m-${posts.length}` }));
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(srv.address() as { port: number }).port}/out`;
  return { posts, url, close: () => (srv.closeAllConnections(), srv.close()) };
}

/** A's store, and B's after it: SQLite restarted on A's data dir, or PostgreSQL with B up before A dies. */
async function killAndTakeOver(channel: Record<string, unknown>, drive: (a: Child) => Promise<void>, check: (b: Child) => Promise<void>) {
  const dataDir = tmpDataDir();
  const configFile = path.join(dataDir, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify({ channels: { webhook: { secret: 'whsec', dmPolicy: 'open', ...channel } } }));
  const env: Record<string, string> = onPostgresPass()
    ? { DATABASE_URL: process.env.TEST_DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL, CROSSTALK_TEST_PG_SCHEMA: `t_sendtk_${crypto.randomBytes(4).toString('hex')}`, CROSSTALK_PG_POOL: '4' }
    : {};
  const a = await startChildServer({ dataDir, configFile, env });
  let b: Child | null = onPostgresPass() ? await startChildServer({ dataDir: tmpDataDir(), configFile, env }) : null;
  try {
    await drive(a);
    a.kill();
    expect(await a.exited).toBe(137);
    b ??= await startChildServer({ dataDir, configFile, env });
    await check(b);
  } finally {
    a.kill();
    b?.kill();
    await Promise.all([a.exited, b?.exited]);
  }
}

/** An inbound message from `peer` (the generic webhook channel, signed): its run's reply goes back to the platform. */
async function inbound(a: Child, peer: string, text: string) {
  const body = JSON.stringify({ from: peer, text, messageId: `in-${peer}` });
  const ts = Math.floor(Date.now() / 1000);
  const sig = `sha256=${crypto.createHmac('sha256', 'whsec').update(`${ts}.${body}`).digest('hex')}`;
  const res = await fetch(`${a.url}/api/channels/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-crosstalk-timestamp': String(ts), 'x-crosstalk-signature': sig }, body });
  expect(res.status).toBe(200);
}

const channelRecords = async (c: Child) => (await c.rpc<{ deliveries: any[] }>('deliveries.list', { kind: 'channel' })).deliveries;
const byTarget = (records: any[], peer: string) => records.find((d) => d.to.target === `user:${peer}`);

it('a reply, a `message` post and an unkeyed `send` whose process died while they waited to retry (429, 503) are each sent once more by the process that takes over, and end delivered', async () => {
  // Each message's first POST is refused: the reply's 429 asks for 10 s, the others' 503 gets the 10 s backoff (long
  // enough that the process is killed before any of them is tried again).
  const p = await platform((key) => (key.startsWith('reply-') ? { status: 429, headers: { 'retry-after': '10' } } : { status: 503 }));
  let runId = '';
  try {
    await killAndTakeOver(
      { url: p.url, retryBaseMs: 10_000, maxAttempts: 3 },
      async (a) => {
        await inbound(a, 'peer-reply', '/reply wait for me');
        ({ runId } = await a.rpc('agent', { sessionKey: 'agent:main:main', message: '/tool message {"action":"send","channel":"webhook","to":"peer-tool","text":"from the tool"}' }));
        void a.rpc('send', { channel: 'webhook', to: 'peer-send', message: 'from send' }).catch(() => undefined);
        // Killed once all three were refused and wait to retry (their refusal recorded).
        await until(async () => {
          const l = await channelRecords(a);
          return l.length === 3 && l.every((d) => d.state === 'accepted' && d.attempts === 1 && d.error) && p.posts.length === 3;
        }, 30_000);
      },
      async (b) => {
        // Before: each was closed failed/`interrupted` ("it may have reached the channel"), though no call of it was
        // out, and never sent: the reply was lost, and deliveries.retry refused it (failed is not retryable).
        const done = await until(async () => {
          const l = await channelRecords(b);
          return l.length === 3 && l.every((d) => d.state !== 'accepted') ? l : null;
        }, 60_000);
        for (const peer of ['peer-reply', 'peer-tool', 'peer-send']) expect(byTarget(done, peer)).toMatchObject({ state: 'delivered', attempts: 2 });
        await new Promise((r) => setTimeout(r, 500));
        // One more POST each, under the key of its first.
        expect(p.posts).toHaveLength(6);
        for (const to of ['user:peer-reply', 'user:peer-tool', 'user:peer-send']) {
          const mine = p.posts.filter((x) => x.to === to);
          expect(mine).toHaveLength(2);
          expect(mine[1]!.key).toBe(mine[0]!.key);
        }
        expect(p.posts.filter((x) => x.to === 'user:peer-reply').map((x) => x.text)).toEqual(['wait for me', 'wait for me']);
        // The sends are mirrored into their sessions once; the reply's row was there already.
        for (const peer of ['peer-tool', 'peer-send']) {
          const rows = (await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: `agent:main:webhook:direct:${peer}` })).messages;
          expect(rows.filter((m) => m.kind === 'mirror')).toHaveLength(1);
        }
        // The `message` call itself was in flight when its process died: the re-driven run is told so (its effect unknown).
        const w = await b.rpc<{ status: string }>('agent.wait', { runId, timeoutMs: 60_000 });
        expect(w.status).toBe('ok');
      },
    );
  } finally {
    p.close();
  }
}, 180_000);

it('an attempt lost with its process counts: a reply killed mid-POST ends failed/interrupted with 1 attempt; a keyed send killed mid-POST and repeated shows 2 for its 2 POSTs', async () => {
  // Each message's first POST is taken and never answered: the process dies with the call out.
  const p = await platform(() => 'hold');
  try {
    await killAndTakeOver(
      { url: p.url, timeoutMs: 120_000 },
      async (a) => {
        await inbound(a, 'peer-lost', '/reply lost reply');
        void a.rpc('send', { channel: 'webhook', to: 'peer-keyed', message: 'keyed', idempotencyKey: 'lost-key-1' }).catch(() => undefined);
        await until(() => p.posts.length === 2, 30_000);
      },
      async (b) => {
        // Before: 0 attempts, though the platform got the POST.
        const reply = await until(async () => {
          const d = byTarget(await channelRecords(b), 'peer-lost');
          return d?.state === 'failed' ? d : null;
        }, 60_000);
        expect.soft(reply).toMatchObject({ attempts: 1, error: { code: 'interrupted' } });
        // The key's repeat sends it again (its claimant is dead); before, the record said 1 after the two POSTs.
        const sent = await until(
          () => b.rpc<{ messageId: string }>('send', { channel: 'webhook', to: 'peer-keyed', message: 'keyed', idempotencyKey: 'lost-key-1' }).catch(() => null),
          60_000,
        );
        expect(sent.messageId).toBeTruthy();
        expect(p.posts.filter((x) => x.to === 'user:peer-keyed')).toHaveLength(2);
        expect(byTarget(await channelRecords(b), 'peer-keyed')).toMatchObject({ state: 'delivered', attempts: 2 });
      },
    );
  } finally {
    p.close();
  }
}, 180_000);
