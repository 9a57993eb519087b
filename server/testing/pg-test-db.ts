// The PostgreSQL pass's database per test file: `<base>_r<run>_<pid>`, so that files run side by side never share one.
//
// Why: the event log's settled horizon (server/store/settled.ts) waits for every running transaction of its own
// database. Two files on the one test database held each other's horizon, and their waits for settled events timed
// out; the horizon ignores other databases. A fresh database per file also keeps each store's migration fast: kysely's
// migrator lists every column of every table of every schema in the database, so a database holding the run's earlier
// servers' schemas (hundreds) made each new one slower (160 ms in an empty database, 900 ms beside 125 schemas).
// Created by pg-test-db-setup.ts (a vitest setup file), dropped at the file's end and by pg-test-db-global.ts.
import pg from 'pg';
import { jobsSchema, pgConnectConfig } from '../store/db';

/** The test servers' database when TEST_DATABASE_URL is not set (harness.ts, store-dialects.ts, the setup files). */
export const DEFAULT_TEST_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

export const databaseName = (url: string): string => decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));

/** `<base>_<run>_<file>`: the base URL with its database name suffixed (user, host and query kept). */
export function fileDatabaseUrl(base: string, run: string, file: string | number): string {
  if (!/^r[0-9]+$/.test(run)) throw new Error(`bad test run tag ${run}`);
  if (!/^[1-9][0-9]*$/.test(String(file))) throw new Error(`bad test file number ${file}`);
  const url = new URL(base);
  const db = databaseName(base);
  if (!/^[a-z_][a-z0-9_]*$/.test(db)) throw new Error(`test database name "${db}" is not a plain lower-case name`);
  url.pathname = `/${db}_${run}_${file}`;
  return url.toString();
}

/** Matches the databases of the run `run` (every run's, without one) made from the base database `base`. */
export const runDatabasePattern = (baseDb: string, run?: string): RegExp => new RegExp(`^${baseDb}_(${run ?? 'r[0-9]+'})_[0-9]+$`);

async function withClient<T>(base: string, f: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client(pgConnectConfig(base));
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}

/**
 * Creates the database of `url` unless it exists, connecting through `base` (a database that does exist). Race-safe:
 * a concurrent creation of the same name (duplicate_database, or the catalog's unique_violation) counts as done.
 */
export async function ensureDatabase(base: string, url: string): Promise<void> {
  const name = databaseName(url);
  await withClient(base, async (c) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await c.query(`create database "${name}"`);
        // A test file's database is never crashed (the fault suite's PostgreSQL restart is a clean one, on the base
        // database): its commits need not wait for the disk. On a machine whose flush takes 2 ms (stop 55's: 500
        // dsync writes of 4 KiB in 1.05 s) every PostgreSQL test paid it at each commit. The base database and the
        // product keep the server's setting.
        await c.query(`alter database "${name}" set synchronous_commit = off`);
        return;
      } catch (e) {
        const code = (e as { code?: string }).code;
        if (code === '42P04' || code === '23505') return; // there already, or made meanwhile by another process
        // object_in_use: the template database was busy (another CREATE DATABASE copying it); it is over soon.
        if (code !== '55006' || attempt >= 20) throw e;
        await new Promise((r) => setTimeout(r, 100 * attempt));
      }
    }
  });
}

/** The databases whose names match `pattern`. */
export async function listDatabases(base: string, pattern: RegExp): Promise<string[]> {
  const { rows } = await withClient(base, (c) => c.query<{ datname: string }>('select datname from pg_database'));
  return rows.map((r) => r.datname).filter((n) => pattern.test(n));
}

/**
 * Drops the database `name`. Without `force` one still in use (a connection left open) stays, and false is
 * returned: the run's end drops it with `force`, once no test can be using it.
 */
export async function dropDatabase(base: string, name: string, o: { force?: boolean } = {}): Promise<boolean> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
  return withClient(base, async (c) => {
    // Not asked to drop one in use: PostgreSQL would wait 5 s for its connections to go before refusing.
    if (!o.force && (await c.query('select 1 from pg_stat_activity where datname = $1', [name])).rowCount) return false;
    try {
      await c.query(`drop database if exists "${name}"${o.force ? ' with (force)' : ''}`);
      return true;
    } catch (e) {
      if ((e as { code?: string }).code === '55006') return false; // object_in_use: connected meanwhile
      throw e;
    }
  });
}

/** Drops a store's schema and pg-boss's beside it (the runtime using them closed first); best effort. */
export async function dropStoreSchemas(url: string, schema: string): Promise<void> {
  const c = new pg.Client(pgConnectConfig(url));
  try {
    await c.connect();
    for (const s of [schema, jobsSchema(schema)]) await c.query(`drop schema if exists "${s}" cascade`).catch(() => undefined);
  } finally {
    await c.end().catch(() => undefined);
  }
}
