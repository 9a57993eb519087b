// Store-level suites on both dialects: each suite's own Store, SQLite in a fresh data dir, PostgreSQL in a schema of
// its own that is dropped after the suite.
import { sql } from 'kysely';
import { afterAll, beforeAll } from 'vitest';
import { openDatabase } from '../store/db';
import { Store } from '../store/store';
import { tmpDataDir } from './harness';
import { DEFAULT_TEST_DATABASE_URL } from './pg-test-db';

export const DIALECTS = ['sqlite', 'postgres'] as const;
export type Dialect = (typeof DIALECTS)[number];

const PG_URL = process.env.TEST_DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL;

/** Opens the suite's store before its tests (handed to `set`) and closes it after, dropping its PostgreSQL schema. */
export function withSuiteStore(dialect: Dialect, prefix: string, set: (store: Store) => void): void {
  const schema = `t_${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  let store: Store | undefined;
  beforeAll(async () => {
    store = new Store(await openDatabase({ dataDir: tmpDataDir(), ...(dialect === 'postgres' ? { databaseUrl: PG_URL, pgSchema: schema } : {}) }));
    set(store);
  });
  afterAll(async () => {
    if (!store) return;
    if (dialect === 'postgres') await sql.raw(`drop schema if exists ${schema} cascade`).execute(store.db);
    await store.close();
  });
}
