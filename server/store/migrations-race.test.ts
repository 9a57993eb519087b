// Migrating a fresh PostgreSQL schema while other stores start on it and other schemas of the database are dropped:
// the migrator's cross-schema table lookup, broken by DDL elsewhere, is retried, never a failed start.
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, pgConnectConfig } from './db';
import { migrateToLatest } from './migrations';
import { tmpDataDir } from '../testing/harness';
import { onPostgresPass } from '../testing/store-under-test';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const tag = `t_migrace_${process.pid}_${Math.random().toString(36).slice(2, 6)}`;
const made: string[] = [];

afterAll(async () => {
  if (!made.length) return;
  const c = new pg.Client(pgConnectConfig(PG_URL));
  await c.connect();
  for (const s of made) await c.query(`drop schema if exists ${s} cascade`);
  await c.end();
});

describe.skipIf(!onPostgresPass())('PostgreSQL migrations under concurrent starts and DDL elsewhere', () => {
  it('a table lookup broken by a schema dropped elsewhere (`column "id" of relation "push_keys" does not exist`) is looked up again', async () => {
    const schema = `${tag}_lookup`;
    made.push(schema);
    const pool = new pg.Pool({ ...pgConnectConfig(PG_URL), options: `-c search_path=${schema}`, max: 2 });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
    try {
      await sql.raw(`create schema ${schema}`).execute(db);
      // The first lookup fails as it does when another schema's push_keys is dropped between pg_get_serial_sequence's
      // two catalog lookups (a test run cleaning up while this store starts): what PostgreSQL then answers.
      let lookups = 0;
      const racing = new Proxy(db, {
        get(target, prop) {
          if (prop === 'introspection') {
            const real = target.introspection;
            return {
              getSchemas: () => real.getSchemas(),
              getTables: async (o?: never) => {
                if (++lookups === 1) throw new Error('column "id" of relation "push_keys" does not exist');
                return real.getTables(o);
              },
            };
          }
          const v = Reflect.get(target, prop, target) as unknown;
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
      await migrateToLatest(racing, 'postgres', schema);
      expect(lookups).toBeGreaterThan(1);
      const ran = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(`${schema}.crosstalk_migrations`)}`.execute(db);
      expect(ran.rows[0]!.n).toBeGreaterThan(10);
      expect((await sql<{ n: number }>`select count(*)::int as n from ${sql.table(`${schema}.push_keys`)}`.execute(db)).rows[0]!.n).toBe(0);
    } finally {
      await db.destroy();
    }
  }, 120_000);

  it('N stores started at once on one fresh schema, while other schemas are made and dropped: every one starts, the migrations ran once', async () => {
    const schema = `${tag}_same`;
    made.push(schema);
    const admin = new pg.Client(pgConnectConfig(PG_URL));
    await admin.connect();
    let stop = false;
    // Another test run's schemas (with a push_keys table) come and go meanwhile.
    const churn = (async () => {
      for (let i = 0; !stop; i++) {
        const other = `${tag}_other_${i}`;
        await admin.query(`create schema ${other}; create table ${other}.push_keys (id text primary key, public_key text, private_key text, created_at text)`);
        await admin.query(`drop schema ${other} cascade`);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    try {
      const opened = await Promise.allSettled(Array.from({ length: 4 }, () => openDatabase({ dataDir: tmpDataDir(), databaseUrl: PG_URL, pgSchema: schema })));
      for (const o of opened) if (o.status === 'fulfilled') await o.value.close();
      expect(opened.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason))).toEqual([]);
      const names = await admin.query(`select name from ${schema}.crosstalk_migrations`);
      expect(new Set(names.rows.map((r: { name: string }) => r.name)).size).toBe(names.rowCount);
    } finally {
      stop = true;
      await churn;
      await admin.end();
    }
    // The migrator's table lookup reads every schema of the database: slow on a shared test database full of them.
  }, 240_000);
});
