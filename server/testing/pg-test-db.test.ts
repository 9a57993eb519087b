// The PostgreSQL pass gives each test file a database of its own (pg-test-db-setup.ts), so files side by side never
// hold each other's settled horizon; a harness server's schema lands there, and making and dropping one is race-safe.
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { pgConnectConfig } from '../store/db';
import { startTestServer } from './harness';
import { databaseName, dropDatabase, ensureDatabase, fileDatabaseUrl, listDatabases, runDatabasePattern } from './pg-test-db';
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

describe('fileDatabaseUrl', () => {
  it('suffixes the database name with the run and the file, keeping user, host and query', () => {
    expect(fileDatabaseUrl('postgres://127.0.0.1:5432/test', 'r12', 345)).toBe('postgres://127.0.0.1:5432/test_r12_345');
    expect(fileDatabaseUrl('postgres://postgres@db:5433/ci?sslmode=disable', 'r1', '2')).toBe('postgres://postgres@db:5433/ci_r1_2?sslmode=disable');
    expect(runDatabasePattern('test', 'r12').test('test_r12_345')).toBe(true);
    expect(runDatabasePattern('test', 'r12').test('test_r123_45')).toBe(false);
    expect(runDatabasePattern('test').test('test_r123_45')).toBe(true);
    expect(runDatabasePattern('test').test('test')).toBe(false);
  });
  it('refuses a run, a file or a database name it could not put into SQL as is', () => {
    expect(() => fileDatabaseUrl('postgres://127.0.0.1:5432/test', 'r1', '0')).toThrow();
    expect(() => fileDatabaseUrl('postgres://127.0.0.1:5432/test', 'r1', 'x;drop')).toThrow();
    expect(() => fileDatabaseUrl('postgres://127.0.0.1:5432/test', 'x";', 1)).toThrow();
    expect(() => fileDatabaseUrl('postgres://127.0.0.1:5432/Te%22st', 'r1', 1)).toThrow();
  });
});

describe.skipIf(!onPostgresPass())('the PostgreSQL pass: a database per test file', () => {
  const base = process.env.CROSSTALK_TEST_BASE_DATABASE_URL!;
  const fresh = `${databaseName(base ?? 'postgres://x/test')}_probe_${process.pid}`; // not a run's name (runDatabasePattern)
  const freshUrl = () => {
    const u = new URL(base);
    u.pathname = `/${fresh}`;
    return u.toString();
  };
  afterAll(async () => {
    if (base) await dropDatabase(base, fresh, { force: true });
  });

  it("points TEST_DATABASE_URL at this file's database, where a harness server's schema lands", async () => {
    expect(base).toBeTruthy();
    expect(process.env.TEST_DATABASE_URL).toBe(fileDatabaseUrl(base, inject('crosstalkPgRun'), process.pid));
    const [{ db }] = await query<{ db: string }>(process.env.TEST_DATABASE_URL!, 'select current_database() as db');
    expect(db).toBe(`${databaseName(base)}_${inject('crosstalkPgRun')}_${process.pid}`);
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

  it('creates a missing database once, even when several processes ask at the same time', async () => {
    await Promise.all([ensureDatabase(base, freshUrl()), ensureDatabase(base, freshUrl()), ensureDatabase(base, freshUrl())]);
    await ensureDatabase(base, freshUrl()); // and again, existing
    expect(await listDatabases(base, new RegExp(`^${fresh}$`))).toEqual([fresh]);
    // Its commits do not wait for the disk.
    expect(await query(freshUrl(), 'show synchronous_commit')).toEqual([{ synchronous_commit: 'off' }]);
  });

  it('drops a database in use only with force: a server left open keeps its database until the run ends', async () => {
    await ensureDatabase(base, freshUrl());
    const held = new pg.Client(pgConnectConfig(freshUrl()));
    await held.connect();
    held.on('error', () => undefined); // terminated by the forced drop
    try {
      expect(await dropDatabase(base, fresh)).toBe(false);
      expect(await listDatabases(base, new RegExp(`^${fresh}$`))).toEqual([fresh]);
      expect(await dropDatabase(base, fresh, { force: true })).toBe(true);
      expect(await listDatabases(base, new RegExp(`^${fresh}$`))).toEqual([]);
    } finally {
      await held.end().catch(() => undefined);
    }
  });
});
