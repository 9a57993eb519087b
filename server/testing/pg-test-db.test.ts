// The PostgreSQL pass gives each vitest worker a database of its own (pg-worker-setup.ts), so files side by side never
// hold each other's settled horizon; a harness server's schema lands there, and creating the database is race-safe.
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { pgConnectConfig } from '../store/db';
import { startTestServer } from './harness';
import { ensureDatabase, workerDatabaseUrl } from './pg-worker-db';
import { onPostgresPass } from './store-under-test';

async function query<T>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const c = new pg.Client(pgConnectConfig(url));
  await c.connect();
  try {
    return (await c.query(text, values)).rows as T[];
  } finally {
    await c.end();
  }
}

describe('workerDatabaseUrl', () => {
  it('suffixes the database name with the worker number, keeping user, host and query', () => {
    expect(workerDatabaseUrl('postgres://127.0.0.1:5432/test', 2)).toBe('postgres://127.0.0.1:5432/test_w2');
    expect(workerDatabaseUrl('postgres://postgres@db:5433/ci?sslmode=disable', '1')).toBe('postgres://postgres@db:5433/ci_w1?sslmode=disable');
  });
  it('refuses a worker number or a database name it could not put into SQL as is', () => {
    expect(() => workerDatabaseUrl('postgres://127.0.0.1:5432/test', '0')).toThrow();
    expect(() => workerDatabaseUrl('postgres://127.0.0.1:5432/test', 'x;drop')).toThrow();
    expect(() => workerDatabaseUrl('postgres://127.0.0.1:5432/Te%22st', 1)).toThrow();
  });
});

describe.skipIf(!onPostgresPass())('the PostgreSQL pass: a database per vitest worker', () => {
  const base = process.env.CROSSTALK_TEST_BASE_DATABASE_URL!;
  const fresh = `${new URL(base ?? 'postgres://x/test').pathname.slice(1)}_wdbtest_${process.pid}`;
  afterAll(async () => {
    if (base) await query(base, `drop database if exists "${fresh}"`);
  });

  it("points TEST_DATABASE_URL at this worker's database, where a harness server's schema lands", async () => {
    expect(base).toBeTruthy();
    const worker = process.env.VITEST_POOL_ID!;
    expect(process.env.TEST_DATABASE_URL).toBe(workerDatabaseUrl(base, worker));
    const [{ db }] = await query<{ db: string }>(process.env.TEST_DATABASE_URL!, 'select current_database() as db');
    expect(db).toMatch(new RegExp(`_w${worker}$`));
    const srv = await startTestServer();
    try {
      const schema = `t_${path.basename(srv.dataDir).replace(/[^a-z0-9]/gi, '').toLowerCase()}`;
      const here = await query(process.env.TEST_DATABASE_URL!, 'select 1 from pg_namespace where nspname = $1', [schema]);
      const inBase = await query(base, 'select 1 from pg_namespace where nspname = $1', [schema]);
      expect([here.length, inBase.length]).toEqual([1, 0]);
    } finally {
      await srv.close();
    }
  });

  it('creates a missing database once, even when two workers ask at the same time', async () => {
    const u = new URL(base);
    u.pathname = `/${fresh}`;
    const url = u.toString();
    await Promise.all([ensureDatabase(base, url), ensureDatabase(base, url), ensureDatabase(base, url)]);
    await ensureDatabase(base, url); // and again, existing
    expect(await query(base, 'select 1 from pg_database where datname = $1', [fresh])).toHaveLength(1);
  });
});
