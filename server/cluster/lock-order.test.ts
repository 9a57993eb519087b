// Statements that lock several sessions lock them in key order (issue 20: a fenced event insert and a sweep freeing a
// dead process's sessions met as `deadlock detected`): with the first key held elsewhere, each waits there holding
// none of the others, whatever order the rows lie in on disk or the plan reads them in.
import crypto from 'node:crypto';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { PendingEvent } from '../events/types';
import { openDatabase, pgConnectConfig } from '../store/db';
import type { Database } from '../store/schema';
import { Store } from '../store/store';
import { tmpDataDir, until } from '../testing/harness';
import { freeSessionsOf, freeSessionsOfGone } from './lease-sql';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const schema = `t_lockorder_${crypto.randomBytes(4).toString('hex')}`;
const app = `ct_lockorder_${process.pid}_${crypto.randomBytes(3).toString('hex')}`;
// Key order a < b; on disk b comes first (inserted first), so a scan in physical order meets b first.
const A = 'agent:main:a';
const B = 'agent:main:b';

let store: Store;
let db: Kysely<Database>;
let owner: pg.Client;
let other: pg.Client;
const handles: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  const h = await openDatabase({ dataDir: tmpDataDir(), databaseUrl: PG_URL, pgSchema: schema });
  handles.push(h);
  // The store's own connections read rows in physical order (no index or bitmap scan), as a seq scan of a larger
  // table or a bitmap heap scan does: the order a statement locks in must not depend on the plan.
  const pool = new pg.Pool({ ...h.pg!.connect, options: `-c search_path=${schema} -c enable_indexscan=off -c enable_bitmapscan=off -c enable_indexonlyscan=off`, application_name: app, max: 4 });
  db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  handles.push({ close: () => db.destroy() });
  store = new Store({ ...h, db, close: async () => undefined });
  const client = () => new pg.Client({ ...pgConnectConfig(PG_URL), options: `-c search_path=${schema}` });
  owner = client();
  other = client();
  await owner.connect();
  await other.connect();
});

afterAll(async () => {
  await owner?.end().catch(() => undefined);
  await other?.end().catch(() => undefined);
  if (db) await sql.raw(`drop schema if exists ${schema} cascade`).execute(db).catch(() => undefined);
  for (const h of handles.reverse()) await h.close().catch(() => undefined);
});

/** Sessions b then a (that order on disk), both held by `holder` under fresh epochs. */
async function twoSessions(holder: string): Promise<void> {
  await sql`delete from sessions`.execute(db);
  for (const key of [B, A]) await store.ensureSession({ key, agentId: 'main', kind: 'main' });
  await sql`update sessions set owner = ${holder}, epoch = nextval('session_epochs')`.execute(db);
}

/** Holds session a's row (as another process's run end does), runs `write`, and checks it waits on a without holding b. */
async function waitsOnAOnly(write: () => Promise<unknown>): Promise<void> {
  await owner.query('begin');
  await owner.query('select key from sessions where key = $1 for update', [A]);
  const done = write();
  done.catch(() => undefined);
  try {
    const waiting = `select 1 from pg_locks l join pg_stat_activity a using (pid) where a.application_name = $1 and not l.granted`;
    await until(async () => (await other.query(waiting, [app])).rowCount, 10_000);
    // b is free: the waiting statement has not locked it (in physical order it would hold b while waiting on a).
    await other.query('begin');
    await other.query(`set local lock_timeout = '1s'`);
    await other.query('select key from sessions where key = $1 for update', [B]);
    await other.query('rollback');
  } finally {
    await other.query('rollback').catch(() => undefined);
    await owner.query('rollback');
  }
  await done;
}

it('a fenced event insert for several sessions locks them in key order', async () => {
  await twoSessions('p_me');
  const epochs = await sql<{ key: string; epoch: number }>`select key, epoch from sessions`.execute(db);
  for (const r of epochs.rows) store.setFence(r.key, Number(r.epoch));
  const ev = (key: string, runId: string): PendingEvent => ({ runId, seq: 1, stream: 'assistant', ts: new Date().toISOString(), sessionKey: key, data: {}, epoch: store.fenceOf(key)! });
  let ids: unknown[] = [];
  await waitsOnAOnly(async () => (ids = await store.insertEvents([ev(B, 'r_b'), ev(A, 'r_a')])));
  expect(ids.every((x) => x !== null)).toBe(true);
});

it('the sweep freeing a dead process’s sessions locks them in key order', async () => {
  await twoSessions('p_dead');
  let n = 0;
  await waitsOnAOnly(async () => (n = await freeSessionsOf(db, 'p_dead')));
  expect(n).toBe(2);
  const left = await sql<{ owner: string | null }>`select owner from sessions`.execute(db);
  expect(left.rows.map((r) => r.owner)).toEqual([null, null]);
});

it('the sweep freeing sessions claimed under identities declared dead locks them in key order', async () => {
  await twoSessions('p_zombie');
  await sql`insert into processes (id, host, pid, url, started_at, heartbeat_ms, status, lock_key) values ('p_zombie', 'h', 1, '', ${new Date().toISOString()}, 0, 'dead', 1)`.execute(db);
  let n = 0;
  await waitsOnAOnly(async () => (n = await freeSessionsOfGone(db, 'p_me')));
  expect(n).toBe(2);
});
