// Opens the store: SQLite (better-sqlite3, WAL) in the data dir by default, PostgreSQL when a URL is given.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { envNumber } from '../env-number.mjs';
import { Kysely, PostgresDialect } from 'kysely';
import type { Database, DialectName } from './schema';
import { migrateToLatest } from './migrations';
import { lockDataDir } from './data-dir-lock';
import { LoopShare, LoopSharingSqliteDialect } from './loop-share';
import { SqliteSearcher } from './search-worker';
import { SqliteSearchIndexer } from './search-indexer';
import { WalCheckpointer } from './wal-checkpointer';
import { PG_JIT, UNPREPARED } from './pg-plans';
export { DataDirInUseError } from './data-dir-lock';

export interface DbHandle {
  db: Kysely<Database>;
  dialect: DialectName;
  close(): Promise<void>;
  /** SQLite only: the connection itself, for the hot statements run without Kysely's builder (./hot-sqlite). */
  sqlite?: import('better-sqlite3').Database;
  /** SQLite only: sessions.search's worker thread over the same file (started on the first search). */
  sqliteSearch?: SqliteSearcher;
  /** SQLite only: writes the full-text index behind the turns, in batches (./search-indexer). */
  searchIndexer?: SqliteSearchIndexer;
  /** SQLite only: the thread that checkpoints the WAL (the main connection never does: ./wal-checkpointer). */
  walCheckpointer?: WalCheckpointer;
  /** PostgreSQL only: what a dedicated (non-pooled) connection needs, and the schema tests isolate in. */
  pg?: { connect: import('pg').ClientConfig; schema?: string; pool: import('pg').Pool };
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

/**
 * The store's work in one turn of the event loop past which the next transaction waits for a later turn (./loop-share).
 * CROSSTALK_SQLITE_TURN_MS=0 hands the connection over at once, as before (for comparing).
 */
const SQLITE_TURN_BUDGET_MS = Number(process.env.CROSSTALK_SQLITE_TURN_MS ?? 5) || Infinity;

async function openSqlite(dataDir: string): Promise<DbHandle> {
  const { default: BetterSqlite3 } = await import('better-sqlite3');
  fs.mkdirSync(/* turbopackIgnore: true */ dataDir, { recursive: true });
  const unlock = lockDataDir(BetterSqlite3, dataDir);
  let db: Kysely<Database>;
  let sqlite: import('better-sqlite3').Database;
  const file = path.join(/* turbopackIgnore: true */ dataDir, 'crosstalk.sqlite');
  try {
    sqlite = new BetterSqlite3(file);
    sqlite.pragma('journal_mode = WAL');
    // WAL + NORMAL: commits do not fsync; the WAL is synced at checkpoints (durable across process crashes).
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('busy_timeout = 5000');
    db = new Kysely<Database>({ dialect: new LoopSharingSqliteDialect({ database: withStatementCache(sqlite) }, new LoopShare(SQLITE_TURN_BUDGET_MS)) });
    await migrateToLatest(db, 'sqlite');
  } catch (e) {
    unlock();
    throw e;
  }
  const searchIndexer = new SqliteSearchIndexer(sqlite, db).start();
  const sqliteSearch = new SqliteSearcher(file, { beforeSearch: () => searchIndexer.catchUp() });
  const walCheckpointer = new WalCheckpointer(file, sqlite);
  return {
    db,
    dialect: 'sqlite',
    sqlite,
    sqliteSearch,
    searchIndexer,
    walCheckpointer,
    close: async () => {
      searchIndexer.close();
      await sqliteSearch.close();
      await walCheckpointer.close();
      await db.destroy();
      unlock();
    },
  };
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

/**
 * PostgreSQL parses and plans an unnamed statement on every execution; our hot statements (a run's start, end,
 * events) are CTEs whose planning costs as much as running them. Every parameterised statement becomes a named
 * prepared statement of its connection (the name is a hash of its text), up to PREPARED_PER_CONNECTION shapes
 * per connection; past that, statements run unnamed as before. A statement starting with UNPREPARED (./pg-plans) is
 * never named: it is planned with its values every time.
 */
const PREPARED_PER_CONNECTION = 300;
export function withPreparedStatements(pool: import('pg').Pool) {
  const names = new Map<string, string>();
  const nameOf = (text: string) => {
    let name = names.get(text);
    if (!name) {
      name = `ct_${crypto.createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
      if (names.size >= 2000) names.delete(names.keys().next().value!);
      names.set(text, name);
    }
    return name;
  };
  pool.on('connect', (client) => {
    const prepared = new Set<string>();
    const query = client.query.bind(client) as (...a: unknown[]) => unknown;
    (client as unknown as { query: (...a: unknown[]) => unknown }).query = (config: unknown, values?: unknown, cb?: unknown) => {
      // A statement planned for its own values each time (./pg-plans) stays unnamed.
      if (typeof config === 'string' && Array.isArray(values) && values.length && !config.startsWith(UNPREPARED)) {
        const name = nameOf(config);
        if (prepared.has(name) || prepared.size < PREPARED_PER_CONNECTION) {
          prepared.add(name);
          return query({ name, text: config, values }, cb);
        }
      }
      return query(config, values, cb);
    };
  });
}

/** pg-boss's schema beside the store's (`<schema>_pgboss`; `pgboss` beside `public`). */
export const jobsSchema = (pgSchema?: string) => (pgSchema ? `${pgSchema}_pgboss` : 'pgboss');

/**
 * Connection settings as psql takes them: the URL, then PG* variables, then the OS user name. node-postgres
 * alone reads only USER, which minimal shells and containers may lack ("no PostgreSQL user name specified").
 */
export function pgConnectConfig(url: string): import('pg').ClientConfig {
  const parsed = new URL(url);
  if (parsed.username) return { connectionString: url };
  const user = process.env.PGUSER || process.env.USER || safeOsUser();
  // node-postgres lets the URL's (empty) user win over a `user` option: put the name into the URL itself.
  if (user) parsed.username = encodeURIComponent(user);
  return { connectionString: parsed.toString() };
}

function safeOsUser(): string | undefined {
  try {
    return os.userInfo().username;
  } catch {
    return undefined;
  }
}

/**
 * How long PostgreSQL lets a transaction of ours sit idle between two statements before it ends that connection:
 * `CROSSTALK_PG_IDLE_TX_MS`, by default as long as a process may go silent before the others declare it dead
 * (`CROSSTALK_DEAD_AFTER_MS`, 15 s: cluster.ts LIVENESS), and at least 10 s. Our transactions take milliseconds; one idle that long
 * belongs to a process that is stopped (SIGSTOP, a paused VM) or wedged. Before, it held its row locks for the whole
 * stop: the processes taking its sessions over, and a client's retry of the same idempotency key on another process,
 * waited on them. When the stopped process goes on, that transaction fails as a lost connection does (the pool
 * reconnects; its runs were taken over under newer leases).
 */
export function pgIdleTxMs(env: Record<string, string | undefined> = process.env): number {
  const set = Number(env.CROSSTALK_PG_IDLE_TX_MS);
  if (env.CROSSTALK_PG_IDLE_TX_MS !== undefined && Number.isFinite(set) && set > 0) return Math.round(set);
  // Never under 10 s by default: a short liveness window (tests, a tuned cluster) must not end a transaction that a
  // loaded machine left idle for a second or two.
  const dead = Number(env.CROSSTALK_DEAD_AFTER_MS ?? 15_000);
  return Math.max(10_000, Number.isFinite(dead) ? Math.round(dead) : 15_000);
}

async function openPostgres(url: string, schema?: string): Promise<DbHandle> {
  const pg = await import('pg');
  const types = pg.default.types;
  types.setTypeParser(20, (v: string) => Number(v)); // int8 ids fit in a JS number
  const connect = pgConnectConfig(url);
  if (schema && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`bad schema name ${schema}`);
  // No JIT (./pg-plans): every connection of the store, the pool's, the cluster's and pg-boss's (they share `connect`).
  // A transaction left idle longer than pgIdleTxMs() is ended by PostgreSQL (its process stopped mid-transaction).
  const options = { options: [...(schema ? [`-c search_path=${schema}`] : []), `-c jit=${PG_JIT}`, `-c idle_in_transaction_session_timeout=${pgIdleTxMs()}`].join(' ') };
  const pool = new pg.default.Pool({ ...connect, ...options, max: envNumber('CROSSTALK_PG_POOL') });
  // An idle client whose connection drops emits 'error' on the pool; unhandled, it would end the process.
  pool.on('error', (e) => console.error(`crosstalk: PostgreSQL connection lost (${e.message}); the pool reconnects on the next query`));
  // A client checked out of the pool (inside a transaction, between two statements) whose connection drops emits
  // 'error' with no query to take it and no pool listener (the pool listens to idle clients only): unhandled, it
  // would end the process at a PostgreSQL restart. The statement in flight (if any) still fails with the error,
  // and the pool drops the broken client when it is released.
  pool.on('connect', (client) => client.on('error', () => undefined));
  withPreparedStatements(pool);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  // Several processes may start at once on a fresh database: one migrates at a time (a session-level advisory lock).
  const c = new pg.default.Client(connect);
  c.on('error', () => undefined);
  await c.connect();
  try {
    await c.query('select pg_advisory_lock(hashtext($1))', [`crosstalk.migrate.${schema ?? 'public'}`]);
    if (schema) await c.query(`create schema if not exists ${schema}`);
    await migrateToLatest(db, 'postgres', schema);
  } finally {
    await c.end().catch(() => undefined);
  }
  return { db, dialect: 'postgres', close: () => db.destroy(), pg: { connect: { ...connect, ...options }, schema, pool } };
}
