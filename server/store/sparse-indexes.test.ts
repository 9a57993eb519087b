// 0024_sparse_indexes: the indexes on mostly-null columns hold only the rows with a value, and the queries that
// compare those columns with a value still use them.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness';
import { onPostgresPass } from '../testing/store-under-test';
import { SPARSE_INDEXES } from './migrations-sparse-indexes';

describe('sparse indexes (0024_sparse_indexes)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  }, 120_000);
  afterAll(() => s?.close());

  it('are partial, on the column that must be set', async () => {
    const db = s.rt.store.db;
    for (const [name, , , rows] of SPARSE_INDEXES) {
      const def = onPostgresPass()
        ? (await sql<{ d: string }>`select indexdef as d from pg_indexes where indexname = ${name} and schemaname = current_schema()`.execute(db)).rows[0]?.d
        : (await sql<{ d: string }>`select sql as d from sqlite_master where type = 'index' and name = ${name}`.execute(db)).rows[0]?.d;
      expect(def, name).toBeTruthy();
      const flat = (x: string) => x.toLowerCase().replace(/[()]|::text/g, '').replace(/\s+/g, ' ');
      expect(flat(def!), name).toContain(`where ${flat(rows)}`);
    }
    const gone = onPostgresPass()
      ? (await sql<{ n: number }>`select count(*)::int as n from pg_indexes where indexname = 'runs_session' and schemaname = current_schema()`.execute(db)).rows[0]!.n
      : (await sql<{ n: number }>`select count(*) as n from sqlite_master where type = 'index' and name = 'runs_session'`.execute(db)).rows[0]!.n;
    expect(gone).toBe(0);
  });

  it('a top-level session turn leaves them empty; a delegate is in them and found through them', async () => {
    const db = s.rt.store.db;
    const r = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:top', message: 'hello' });
    await s.rpc('agent.wait', { runId: r.runId, timeoutMs: 10_000 });
    await s.rt.store.ensureSession({ key: 'agent:main:subagent:one', agentId: 'main', kind: 'subagent', parentKey: 'agent:main:top' });
    const count = async (name: string, table: string) =>
      Number((await sql<{ n: number }>`select count(*) as n from ${sql.raw(table)} where ${sql.raw(SPARSE_INDEXES.find((x) => x[0] === name)![3])}`.execute(db)).rows[0]!.n);
    if (!onPostgresPass()) {
      // The entries the index itself holds (its leaf cells), not what a query over the table says.
      const cells = async (name: string) => Number((await sql<{ n: number | null }>`select sum(ncell) as n from dbstat where name = ${name} and pagetype = 'leaf'`.execute(db)).rows[0]!.n ?? 0);
      expect(await cells('sessions_parent')).toBe(1);
      expect(await cells('sessions_delegates')).toBe(1);
      expect(await cells('sessions_owner')).toBe(await count('sessions_owner', 'sessions'));
      expect(await cells('runs_merged_into')).toBe(0);
      expect(await cells('sessions_kind_live')).toBe(1); // the delegate, not the top-level session
      const stats = (await sql<{ detail: string }>`explain query plan select count(*), sum(bytes) from sessions where kind = 'subagent' and dismissed_at is null`.execute(db)).rows.map((x) => x.detail).join(' | ');
      expect(stats).toMatch(/USING COVERING INDEX sessions_kind_live/);
      const plan = (await sql<{ detail: string }>`explain query plan select * from sessions where parent_key = ${'agent:main:top'} and kind = 'subagent' and dismissed_at is null order by last_interacted_at desc, key desc limit 5`.execute(db)).rows.map((x) => x.detail).join(' | ');
      expect(plan).toMatch(/USING (COVERING )?INDEX sessions_(delegates|parent)/);
    } else {
      const plan = await db.transaction().execute(async (tx) => {
        await sql`set local enable_seqscan = off`.execute(tx);
        return (await sql<{ 'QUERY PLAN': string }>`explain select * from sessions where parent_key = ${'agent:main:top'}`.execute(tx)).rows.map((x) => x['QUERY PLAN']).join(' | ');
      });
      expect(plan).toMatch(/sessions_(delegates|parent)/);
    }
    expect((await s.rt.store.listDelegates({ parentKey: 'agent:main:top', limit: 5 })).map((x) => x.key)).toEqual(['agent:main:subagent:one']);
    expect(await s.rt.store.delegateStats()).toEqual({ reusable: 1, bytes: 0 });
  });
});
