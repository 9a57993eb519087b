// Webhooks on the job engine (pg-boss) across processes sharing one PostgreSQL schema: each webhook is POSTed
// exactly once however many processes work the queue; a process SIGKILLed while its POST hangs loses nothing (the
// engine expires that attempt and another process delivers it); and when that was the last attempt, the engine's
// dead-letter queue has the other process mark the row dead. Plus the pieces: the job rides the run's end
// transaction (a rolled-back one leaves no job), and its id derives from the row.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { startChildServer, startTestServer, type TestServer, tmpDataDir, until } from '../testing/harness';
import pg from 'pg';
import { createLogger } from '../logger';
import { pgConnectConfig } from '../store/db';
import { jobsSchema, startJobEngine } from './engine';
import { PgWebhookDispatcher, WEBHOOK_QUEUE, webhookJobId, webhookPolicy } from './webhooks';
import { webhookRow } from '../webhooks/deliver';
import { webhookDeliveryId } from '../store/store-base';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const newSchema = () => `t_jobs_${crypto.randomBytes(4).toString('hex')}`;
type Child = Awaited<ReturnType<typeof startChildServer>>;
const children: Child[] = [];
afterAll(() => {
  for (const c of children) c.kill();
});

/** A receiver that counts POSTs by delivery id; `hang` leaves the first N requests unanswered. */
async function receiver(o: { hang?: number } = {}) {
  const got: Array<{ id: string; answered: boolean }> = [];
  let hang = o.hang ?? 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['x-crosstalk-delivery']);
      if (hang > 0) {
        hang--;
        got.push({ id, answered: false });
        return; // never answers
      }
      got.push({ id, answered: true });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    got,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

type Receiver = Awaited<ReturnType<typeof receiver>>;

const row = (s: TestServer, runId: string) => s.rt.store.db.selectFrom('webhook_outbox').selectAll().where('run_id', '=', runId).executeTakeFirst();
type OutboxRow = NonNullable<Awaited<ReturnType<typeof row>>>;

describe('webhooks on the job engine, several processes', () => {
  it('two processes working one queue POST each webhook exactly once', async () => {
    const schema = newSchema();
    const config = { webhooks: { allowPrivateNetwork: true } };
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const rec = await receiver();
    try {
      const runs = await Promise.all(
        Array.from({ length: 24 }, (_, i) => (i % 2 ? a : b).rpc<{ runId: string }>('agent', { sessionKey: `agent:main:once-${i}`, message: `/reply ${i}`, webhook: { url: rec.url } })),
      );
      await until(async () => (await a.rt.store.db.selectFrom('webhook_outbox').select('id').where('status', '=', 'delivered').execute()).length === runs.length, 20_000);
      await new Promise((r) => setTimeout(r, 1500)); // a duplicate would have had time to arrive
      const ids = rec.got.map((g) => g.id);
      expect(ids.length).toBe(runs.length);
      expect(new Set(ids).size).toBe(runs.length);
      for (const { runId } of runs) expect(await row(a, runId)).toMatchObject({ status: 'delivered', attempts: 1 });
    } finally {
      await rec.close();
      await a.close();
      await b.close();
    }
  });

  /** A child process (a real `kill -9` target) on `schema` whose webhooks time out after 2 s and have `maxAttempts`. */
  async function child(schema: string, maxAttempts: number): Promise<Child> {
    const dataDir = tmpDataDir();
    const configFile = path.join(dataDir, 'config.json');
    fs.writeFileSync(configFile, JSON.stringify({ webhooks: { allowPrivateNetwork: true, maxAttempts, timeoutMs: 2000 } }));
    const c = await startChildServer({ dataDir, configFile, env: { DATABASE_URL: PG_URL, CROSSTALK_TEST_PG_SCHEMA: schema } });
    children.push(c);
    return c;
  }

  /**
   * The failover scenario: a receiver that leaves the first POST unanswered; child process A on a fresh schema (its
   * webhooks with `maxAttempts`) runs a turn with a webhook to it; once A's POST hangs, A is SIGKILLed and B, an
   * in-process server on the same schema, polls the row until it reaches `status`. `check` asserts on what came of it;
   * A, B and the receiver are cleaned up either way.
   */
  async function killWhilePostHangs(
    o: { sessionKey: string; maxAttempts: number; status: 'delivered' | 'dead' },
    check: (t: { settled: OutboxRow; runId: string; b: TestServer; rec: Receiver }) => Promise<void>,
  ): Promise<void> {
    const schema = newSchema();
    const rec = await receiver({ hang: 1 });
    let a: Child | undefined;
    let b: TestServer | undefined;
    try {
      a = await child(schema, o.maxAttempts);
      const { runId } = await a.rpc<{ runId: string }>('agent', { sessionKey: o.sessionKey, message: '/reply bye', webhook: { url: rec.url } });
      await until(() => rec.got.length === 1, 15_000); // A holds the job, its POST unanswered
      a.kill();
      await a.exited;
      b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config: { webhooks: { allowPrivateNetwork: true } } });
      const server = b;
      const settled = await until(async () => {
        const r = await row(server, runId);
        return r?.status === o.status ? r : null;
      }, 25_000);
      await check({ settled, runId, b: server, rec });
    } finally {
      a?.kill();
      await rec.close();
      await b?.close();
    }
  }

  it('a process SIGKILLed while its POST hangs: another process delivers the webhook', async () => {
    await killWhilePostHangs({ sessionKey: 'agent:main:killed', maxAttempts: 3, status: 'delivered' }, async ({ settled, b, rec }) => {
      // The lost attempt counts: the engine expired it, and B's was the second.
      expect(settled).toMatchObject({ attempts: 2, last_error: null });
      // On the delivery's record too (CONTRACT §9). Before: 1, the lost attempt counted on the outbox row only.
      expect(await b.rpc('deliveries.get', { deliveryId: webhookDeliveryId(settled.id) })).toMatchObject({ state: 'delivered', attempts: 2 });
      expect(rec.got.map((g) => g.answered)).toEqual([false, true]);
      expect(new Set(rec.got.map((g) => g.id)).size).toBe(1);
    });
  });

  it('when the killed process held the last attempt, the dead-letter queue has another process mark the row dead', async () => {
    await killWhilePostHangs({ sessionKey: 'agent:main:last', maxAttempts: 1, status: 'dead' }, async ({ settled, runId, b, rec }) => {
      expect(settled.last_error).toMatch(/attempts ran out/);
      expect(rec.got.length).toBe(1); // no attempt after the last
      const listed = await b.rpc<{ webhooks: any[] }>('webhooks.list', { status: 'dead' });
      expect(listed.webhooks.map((w) => w.runId)).toEqual([runId]);
    });
  });

  it('the job is written in the transaction of its row: a rollback leaves neither; a row is enqueued once', async () => {
    const schema = newSchema();
    const s = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config: { webhooks: { allowPrivateNetwork: true } } });
    try {
      const { store } = s.rt;
      const jobs = async (rowId: string) =>
        (await sql<{ n: number }>`select count(*)::int as n from ${sql.id(jobsSchema(schema), 'job')} where name = ${WEBHOOK_QUEUE} and id = ${webhookJobId(rowId)}`.execute(store.db)).rows[0]!.n;
      // 127.0.0.2:9 refuses connections: the attempts fail and the job stays around (retrying).
      const kept = webhookRow('run_kept', { url: 'http://127.0.0.2:9/' }, {}, 'kept');
      const lost = webhookRow('run_lost', { url: 'http://127.0.0.2:9/' }, {}, 'lost');
      await store.db
        .transaction()
        .execute(async (tx) => {
          await store.insertWebhooks(tx, [lost]);
          throw new Error('the run end fails');
        })
        .catch(() => undefined);
      await store.db.transaction().execute((tx) => store.insertWebhooks(tx, [kept]));
      await store.db.transaction().execute((tx) => store.insertWebhooks(tx, [kept])); // again: the same row, no second job
      expect(await jobs(lost.id)).toBe(0);
      expect(await s.rt.store.db.selectFrom('webhook_outbox').select('id').where('id', '=', lost.id).execute()).toEqual([]);
      expect(await jobs(kept.id)).toBe(1);
      expect(s.rt.webhooks).toBeInstanceOf(PgWebhookDispatcher);
    } finally {
      await s.close();
    }
  });

  it('a dead-letter copy older than a deliveries.retry leaves the retried row to its new round', async () => {
    // The first attempt fails (500: with one attempt, the row is dead); the retried round's attempt is left hanging, so
    // that round is still undecided when its dead-letter copy comes (a quick second failure raced the test's check).
    let posts = 0;
    const hook = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (posts++ === 0) res.writeHead(500).end('no');
      });
    });
    await new Promise<void>((ok) => hook.listen(0, '127.0.0.1', ok));
    const s = await startTestServer({ databaseUrl: PG_URL, pgSchema: newSchema(), config: { webhooks: { allowPrivateNetwork: true, maxAttempts: 1 } } });
    try {
      const { store } = s.rt;
      const dispatcher = s.rt.webhooks as PgWebhookDispatcher;
      const r = webhookRow('run_dlq', { url: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook` }, {}, 'dlq');
      await store.db.transaction().execute((tx) => store.insertWebhooks(tx, [r]));
      const status = async () => (await store.db.selectFrom('webhook_outbox').select('status').where('id', '=', r.id).executeTakeFirstOrThrow()).status;
      await until(async () => (await status()) === 'dead'); // its one attempt failed
      const diedAt = new Date();
      await new Promise((ok) => setTimeout(ok, 5));
      // Retried (deliveries.retry) before the engine's dead-letter copy of the old job is worked: that copy is stale.
      await store.deliveryRetry.get('webhook_outbox')!({ source: `webhook_outbox:${r.id}` } as never);
      expect(await status()).toBe('pending');
      expect(await dispatcher.deadLettered(r.id, diedAt)).toBe(false);
      expect(await status()).toBe('pending');
      // A dead-letter copy of the new round's job does kill it.
      expect(await dispatcher.deadLettered(r.id, new Date(Date.now() + 1000))).toBe(true);
      expect(await status()).toBe('dead');
    } finally {
      hook.closeAllConnections();
      hook.close();
      await s.close();
    }
  });

  it('processes starting together on a fresh database all start their engine', async () => {
    const pool = new pg.Pool({ ...pgConnectConfig(PG_URL), max: 8 });
    const schema = newSchema();
    try {
      for (let round = 0; round < 3; round++) {
        const started = await Promise.allSettled([1, 2, 3, 4].map(() => startJobEngine({ pool, pgSchema: `${schema}${round}`, log: createLogger() })));
        expect(started.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok'))).toEqual(['ok', 'ok', 'ok', 'ok']);
        for (const r of started) if (r.status === 'fulfilled') await r.value.stop({ graceful: false, close: false });
        await pool.query(`drop schema if exists ${jobsSchema(`${schema}${round}`)} cascade`);
      }
    } finally {
      await pool.end();
    }
  });

  it('the retry policy on the engine\'s terms: whole seconds, at least 1; expiry outlasts the POST timeout', () => {
    expect(webhookPolicy({ allowPrivateNetwork: false, retryBaseMs: 40, maxAttempts: 5, timeoutMs: 300 })).toMatchObject({ retryLimit: 4, retryDelay: 1, retryBackoff: true, expireInSeconds: 3 });
    expect(webhookPolicy({ allowPrivateNetwork: false, retryBaseMs: 2500, maxAttempts: 8, timeoutMs: 10_000 })).toMatchObject({ retryLimit: 7, retryDelay: 3, expireInSeconds: 12 });
    expect(webhookJobId('wh_a')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(webhookJobId('wh_a')).toBe(webhookJobId('wh_a'));
    expect(webhookJobId('wh_a')).not.toBe(webhookJobId('wh_b'));
  });
});
