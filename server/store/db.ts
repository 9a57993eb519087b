// Opens the store: SQLite (better-sqlite3, WAL) in the data dir by default, PostgreSQL when a URL is given.
import fs from 'node:fs';
import path from 'node:path';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import type { Database } from './schema';
import { type DialectName, migrateToLatest } from './migrations';

export interface DbHandle {
  db: Kysely<Database>;
  dialect: DialectName;
  close(): Promise<void>;
}

export interface OpenDbOptions {
  dataDir: string;
  databaseUrl?: string;
  /** PostgreSQL schema to use (created when missing); lets tests run isolated on one database. */
  pgSchema?: string;
}

export async function openDatabase(opts: OpenDbOptions): Promise<DbHandle> {
  if (opts.databaseUrl) return openPostgres(opts.databaseUrl, opts.pgSchema);
  return openSqlite(opts.dataDir);
}

async function openSqlite(dataDir: string): Promise<DbHandle> {
  const { default: BetterSqlite3 } = await import('better-sqlite3');
  fs.mkdirSync(/* turbopackIgnore: true */ dataDir, { recursive: true });
  const sqlite = new BetterSqlite3(path.join(/* turbopackIgnore: true */ dataDir, 'crosstalk.sqlite'));
  sqlite.pragma('journal_mode = WAL');
  // WAL + NORMAL: commits do not fsync; the WAL is synced at checkpoints (durable across process crashes).
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  await migrateToLatest(db, 'sqlite');
  return { db, dialect: 'sqlite', close: () => db.destroy() };
}

/**
 * Kysely prepares every query anew; preparing costs more than running our small indexed queries,
 * so keep the prepared statements of the (few, parameterised) query shapes we issue.
 */
function withStatementCache(sqlite: import('better-sqlite3').Database): import('better-sqlite3').Database {
  const cache = new Map<string, import('better-sqlite3').Statement>();
  const prepare = sqlite.prepare.bind(sqlite);
  return new Proxy(sqlite, {
    get(target, prop, receiver) {
      if (prop === 'prepare') {
        return (sql: string) => {
          let stmt = cache.get(sql);
          if (!stmt) {
            stmt = prepare(sql);
            if (cache.size >= 500) cache.delete(cache.keys().next().value!);
            cache.set(sql, stmt);
          }
          return stmt;
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

async function openPostgres(url: string, schema?: string): Promise<DbHandle> {
  const pg = await import('pg');
  const types = pg.default.types;
  types.setTypeParser(20, (v: string) => Number(v)); // int8 ids fit in a JS number
  if (schema) {
    if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`bad schema name ${schema}`);
    const c = new pg.default.Client({ connectionString: url });
    await c.connect();
    await c.query(`create schema if not exists ${schema}`);
    await c.end();
  }
  const pool = new pg.default.Pool({
    connectionString: url,
    max: 10,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  await migrateToLatest(db, 'postgres', schema);
  return { db, dialect: 'postgres', close: () => db.destroy() };
}
