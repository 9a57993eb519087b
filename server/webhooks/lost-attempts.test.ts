// Webhook attempts cut off by a SIGKILL of their process count (README "Webhooks": in `attempts`, the outbox row's and
// the delivery record's), and a round still ends after webhooks.maxAttempts POSTs, dead: on the store under test,
// SQLite restarted on its data dir, or PostgreSQL taken over by the next process on the schema (its job engine
// expires the lost attempt).
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TEST_DATABASE_URL } from '../testing/pg-test-db';
import { startChildServer, tmpDataDir, until } from '../testing/harness';
import { onPostgresPass } from '../testing/store-under-test';

const PG = onPostgresPass();
type Child = Awaited<ReturnType<typeof startChildServer>>;

describe('webhook attempts lost with their process', () => {
  it('every attempt killed mid-POST: each counts, the record and webhooks.list agree, and the round ends dead after maxAttempts POSTs', async () => {
    // The receiver takes every POST and never answers: each attempt is in flight when its process is killed.
    const posts: string[] = [];
    const receiver = http.createServer((req) => {
      req.resume();
      req.on('end', () => posts.push(String(req.headers['x-crosstalk-delivery'])));
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const dataDir = tmpDataDir();
    const configFile = path.join(dataDir, 'config.json');
    // PostgreSQL: the engine expires a lost attempt timeoutMs + 2 s after it began (the test kills within ms of the POST).
    fs.writeFileSync(configFile, JSON.stringify({ webhooks: { allowPrivateNetwork: true, maxAttempts: 3, retryBaseMs: 50, timeoutMs: PG ? 2000 : 60_000 } }));
    const env: Record<string, string> = PG ? { DATABASE_URL: process.env.TEST_DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL, CROSSTALK_TEST_PG_SCHEMA: `t_lost_${crypto.randomBytes(4).toString('hex')}` } : {};
    const start = () => startChildServer({ dataDir, configFile, env });
    let a: Child = await start();
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const { runId } = await a.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:lost', message: '/reply bye', webhook: { url } });
      for (let k = 1; k <= 3; k++) {
        await until(() => posts.length >= k, 60_000);
        a.kill();
        await a.exited;
        a = await start();
        // Counted before its POST went out. Before (SQLite): 0 after every kill, as the row was written after the POST.
        const [d] = (await a.rpc<{ deliveries: any[] }>('deliveries.list', { kind: 'webhook' })).deliveries;
        expect(d.attempts).toBeGreaterThanOrEqual(k);
      }
      // The round is spent: the restarted process (SQLite) or the engine's dead letter (PostgreSQL) ends it, with no
      // fourth POST. Before (SQLite): the record stayed accepted with attempts 0 and a fourth POST went out.
      const b = a;
      const dead = await until(async () => {
        const [d] = (await b.rpc<{ deliveries: any[] }>('deliveries.list', { kind: 'webhook' })).deliveries;
        return d?.state === 'dead' || posts.length > 3 ? (d ?? null) : null;
      }, 60_000);
      expect(posts.length).toBe(3);
      expect(dead).toMatchObject({ state: 'dead', attempts: 3, error: { message: expect.stringMatching(/attempts ran out/) } });
      const listed = (await b.rpc<{ webhooks: any[] }>('webhooks.list', {})).webhooks.find((w) => w.runId === runId);
      expect(listed).toMatchObject({ status: 'dead', attempts: 3 });
      await new Promise((r) => setTimeout(r, 500));
      expect(posts.length).toBe(3);
      expect(new Set(posts).size).toBe(1);
    } finally {
      a.kill();
      await a.exited;
      receiver.closeAllConnections();
      receiver.close();
    }
  }, 180_000);
});
