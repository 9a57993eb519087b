// Where bench:scale keeps its seeded stores (seeded once, reused by later runs) and how it seeds and reads them.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { openDatabase } from '../../server/store/db';
import { PER_SESSION, seedPostgres, seedSqlite } from './scale-seed';

export type StoreName = 'sqlite' | 'postgres';

export interface ScaleTarget {
  store: StoreName;
  sessions: number;
  /** Kept across runs: $CROSSTALK_SCALE_DIR or the OS temp dir's crosstalk-scale/<store>-<sessions>. */
  dir: string;
  dataDir: string;
  /** PostgreSQL: a database of its own (created when missing). */
  databaseUrl?: string;
}

export function scaleTarget(store: StoreName, sessions: number): ScaleTarget {
  const dir = path.join(process.env.CROSSTALK_SCALE_DIR ?? path.join(os.tmpdir(), 'crosstalk-scale'), `${store}-${sessions}`);
  const pgBase = process.env.BENCH_SCALE_DATABASE_URL ?? `postgres://${process.env.PGUSER ?? process.env.USER ?? 'root'}@127.0.0.1:5432/scaleroom`;
  const databaseUrl = store === 'postgres' ? (sessions === 100_000 ? pgBase : `${pgBase}_${sessions}`) : undefined;
  return { store, sessions, dir, dataDir: path.join(dir, 'data'), ...(databaseUrl ? { databaseUrl } : {}) };
}

const dbName = (url: string) => new URL(url).pathname.slice(1);
const pgArgs = (url: string) => ['-h', new URL(url).hostname, '-p', new URL(url).port || '5432'];

/** Seeds the target unless its marker says it is already seeded; `reseed` starts from an empty store. */
export async function ensureSeeded(t: ScaleTarget, o: { reseed?: boolean } = {}): Promise<{ seededS: number; reused: boolean }> {
  const marker = path.join(t.dir, 'seeded.json');
  if (!o.reseed && fs.existsSync(marker)) return { ...(JSON.parse(fs.readFileSync(marker, 'utf8')) as { seededS: number }), reused: true };
  fs.rmSync(t.dir, { recursive: true, force: true });
  fs.mkdirSync(t.dataDir, { recursive: true });
  if (t.databaseUrl) {
    execFileSync('dropdb', [...pgArgs(t.databaseUrl), '--if-exists', dbName(t.databaseUrl)], { stdio: 'inherit' });
    execFileSync('createdb', [...pgArgs(t.databaseUrl), dbName(t.databaseUrl)], { stdio: 'inherit' });
  }
  // The schema the server expects: the store's own migrations, run once before the bulk load.
  const h = await openDatabase({ dataDir: t.dataDir, databaseUrl: t.databaseUrl });
  await h.close();
  const t0 = performance.now();
  const progress = (done: number, total: number) => process.stdout.write(`\rseeding ${t.store}: ${done.toLocaleString()} / ${total.toLocaleString()} sessions (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
  if (t.databaseUrl) await seedPostgres(t.databaseUrl, t.sessions, progress);
  else seedSqlite(t.dataDir, t.sessions, progress);
  const seededS = (performance.now() - t0) / 1000;
  process.stdout.write(`\nseeded ${t.store}: ${t.sessions.toLocaleString()} sessions, ${(t.sessions * PER_SESSION).toLocaleString()} messages in ${seededS.toFixed(0)} s\n`);
  fs.writeFileSync(marker, JSON.stringify({ seededS, sessions: t.sessions, at: new Date().toISOString() }));
  return { seededS, reused: false };
}

/** Read-only queries on the seeded store, for the bench's own checks (the server holds the SQLite file meanwhile; WAL lets readers in). */
export async function storeQuery<T>(t: ScaleTarget, sqlText: string, params: unknown[] = []): Promise<T[]> {
  if (t.databaseUrl) {
    const c = new pg.Client({ connectionString: t.databaseUrl });
    await c.connect();
    try {
      let i = 0;
      return (await c.query(sqlText.replace(/\?/g, () => `$${++i}`), params)).rows as T[];
    } finally {
      await c.end();
    }
  }
  const db = new Database(path.join(t.dataDir, 'crosstalk.sqlite'), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sqlText).all(...params) as T[];
  } finally {
    db.close();
  }
}
