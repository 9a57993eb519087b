// The PostgreSQL pass's database per vitest worker: `<base>_w<N>`, so that files run side by side never share a database.
//
// Why: the event log's settled horizon (server/store/settled.ts) waits for every running transaction of its own
// database. Two files on the one test database held each other's horizon, and their waits for settled events timed
// out. The horizon already ignores other databases, so a database per worker keeps the files apart.
import pg from 'pg';
import { pgConnectConfig } from '../store/db';

/** The harness's default when TEST_DATABASE_URL is not set (server/testing/harness.ts). */
export const DEFAULT_TEST_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

/** `<base>_w<worker>`: the base URL with its database name suffixed (user, host and query kept). */
export function workerDatabaseUrl(base: string, worker: string | number): string {
  if (!/^[1-9][0-9]*$/.test(String(worker))) throw new Error(`bad vitest worker number ${worker}`);
  const url = new URL(base);
  const db = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!/^[a-z_][a-z0-9_]*$/.test(db)) throw new Error(`test database name "${db}" is not a plain lower-case name`);
  url.pathname = `/${db}_w${worker}`;
  return url.toString();
}

const databaseName = (url: string) => decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));

/**
 * Creates the database of `url` unless it exists, connecting through `base` (a database that does exist). Race-safe:
 * a concurrent creation of the same name (duplicate_database, or the catalog's unique_violation) counts as done.
 */
export async function ensureDatabase(base: string, url: string): Promise<void> {
  const name = databaseName(url);
  const c = new pg.Client(pgConnectConfig(base));
  await c.connect();
  try {
    const { rowCount } = await c.query('select 1 from pg_database where datname = $1', [name]);
    if (rowCount) return;
    for (let attempt = 1; ; attempt++) {
      try {
        await c.query(`create database "${name}"`);
        return;
      } catch (e) {
        const code = (e as { code?: string }).code;
        if (code === '42P04' || code === '23505') return; // made meanwhile by another worker
        // object_in_use: the template database was busy (another CREATE DATABASE copying it); it is over soon.
        if (code !== '55006' || attempt >= 20) throw e;
        await new Promise((r) => setTimeout(r, 100 * attempt));
      }
    }
  } finally {
    await c.end();
  }
}
