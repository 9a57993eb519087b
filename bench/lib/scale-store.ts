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

const DELIVERY_KINDS = ['session_message', 'delegate', 'callback', 'channel', 'webhook', 'push'] as const;
export const DELIVERIES_PER_KIND = 1_000;

/**
 * 1,000 deliveries of each kind (CONTRACT §9) between the seeded delegate trees' sessions, written once into a store
 * the server has migrated (the deliveries table is there); false when the store has no deliveries table.
 */
export async function ensureDeliveries(t: ScaleTarget, sessionKeyOf: (s: number) => string): Promise<boolean> {
  const rows: unknown[][] = [];
  const base = Date.parse('2026-01-01T00:00:00Z') + t.sessions * 60_000;
  DELIVERY_KINDS.forEach((kind, k) => {
    for (let i = 0; i < DELIVERIES_PER_KIND; i++) {
      const s = t.sessions - 1 - ((i * 7 + k) % Math.min(t.sessions, 10_000));
      const parent = t.sessions - 10_000 + Math.floor((s - (t.sessions - 10_000)) / 10) * 10;
      const from = sessionKeyOf(Math.max(0, parent));
      const sessionEnd = kind === 'session_message' || kind === 'delegate' || kind === 'callback';
      const state = i % 10 === 9 ? (sessionEnd ? 'failed' : 'dead') : sessionEnd ? 'answered' : 'delivered';
      const at = new Date(base - (DELIVERY_KINDS.length * DELIVERIES_PER_KIND - (k * DELIVERIES_PER_KIND + i)) * 1000).toISOString();
      rows.push([`dlv_bench_${kind}_${i}`, kind, from, `bench-${Math.max(0, parent)}-0`, sessionEnd ? sessionKeyOf(s) : null, kind === 'channel' ? 'webhook' : null, kind === 'channel' ? `peer-${i}` : null, kind === 'webhook' || kind === 'push' ? `https://hooks.example/${kind}/${i}` : null, state, sessionEnd ? `bench-${s}-0` : null, kind === 'webhook' || kind === 'push' ? (state === 'dead' ? 5 : 1) : 0, state === 'dead' || state === 'failed' ? 'internal' : null, state === 'dead' || state === 'failed' ? 'seeded failure' : null, at, at]);
    }
  });
  const cols = 'id, kind, from_session, from_run, to_session, to_channel, to_target, to_url, state, run_id, attempts, error_code, error_message, created_at, updated_at';
  if (t.databaseUrl) {
    const c = new pg.Client({ connectionString: t.databaseUrl });
    await c.connect();
    try {
      if (!(await c.query(`select 1 from information_schema.tables where table_name = 'deliveries'`)).rowCount) return false;
      if (Number((await c.query(`select count(*)::int as n from deliveries where id like 'dlv_bench_%'`)).rows[0].n) >= rows.length) return true;
      await c.query('begin');
      for (const r of rows) await c.query(`insert into deliveries (${cols}) values (${r.map((_, i) => `$${i + 1}`).join(', ')}) on conflict (id) do nothing`, r);
      await c.query('commit');
    } finally {
      await c.end();
    }
    return true;
  }
  const db = new Database(path.join(t.dataDir, 'crosstalk.sqlite'));
  try {
    db.pragma('busy_timeout = 10000');
    if (!db.prepare(`select 1 from sqlite_master where name = 'deliveries'`).get()) return false;
    const ins = db.prepare(`insert or ignore into deliveries (${cols}) values (${cols.split(',').map(() => '?').join(', ')})`);
    db.transaction(() => {
      for (const r of rows) ins.run(...r);
    })();
    return true;
  } finally {
    db.close();
  }
}
