// 0024_sparse_indexes: the indexes on mostly-null columns hold only the rows with a value, and the queries that
// compare those columns with a value still use them.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness';
import { onPostgresPass } from '../testing/store-under-test';
import { COMPACTION_INDEX, SPARSE_INDEXES } from './migrations-sparse-indexes';

/** An index's definition as the store keeps it (undefined: no such index). */
const indexDef = async (db: TestServer['rt']['store']['db'], name: string) =>
  onPostgresPass()
    ? (await sql<{ d: string }>`select indexdef as d from pg_indexes where indexname = ${name} and schemaname = current_schema()`.execute(db)).rows[0]?.d
    : (await sql<{ d: string }>`select sql as d from sqlite_master where type = 'index' and name = ${name}`.execute(db)).rows[0]?.d;
const flat = (x: string) => x.toLowerCase().replace(/[()]|::text/g, '').replace(/\s+/g, ' ');

describe('sparse indexes (0024_sparse_indexes)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  }, 120_000);
  afterAll(() => s?.close());

  it('are partial, on the column that must be set', async () => {
    const db = s.rt.store.db;
    for (const [name, , , rows] of SPARSE_INDEXES) {
      const def = await indexDef(db, name);
      expect(def, name).toBeTruthy();
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

describe('the compaction index (0026_compaction_index)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  }, 120_000);
  afterAll(() => s?.close());

  it("holds the compaction rows only, replaces messages_session_kind, and serves a session's newest compaction", async () => {
    const db = s.rt.store.db;
    const [name, , rows] = COMPACTION_INDEX;
    const pg = onPostgresPass();
    expect(flat((await indexDef(db, name))!)).toContain(`where ${flat(rows)}`);
    expect(await indexDef(db, 'messages_session_kind')).toBeUndefined();

    const key = 'agent:main:compacted';
    const r = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'hello' });
    await s.rpc('agent.wait', { runId: r.runId, timeoutMs: 10_000 });
    expect(await s.rt.store.newestCompaction(key)).toBeUndefined();
    await s.rt.store.appendMessages([{ sessionKey: key, role: 'system', kind: 'compaction', content: 'first summary', author: { type: 'system', id: 'compactor' } }]);
    await s.rt.store.appendMessages([{ sessionKey: key, role: 'system', kind: 'compaction', content: 'second summary', author: { type: 'system', id: 'compactor' } }]);
    const r2 = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'after' });
    await s.rpc('agent.wait', { runId: r2.runId, timeoutMs: 10_000 });
    expect((await s.rt.store.newestCompaction(key))?.content).toBe('second summary');

    if (!pg) {
      // The index's own entries: the two compaction rows, not the turns' messages.
      expect(Number((await sql<{ n: number | null }>`select sum(ncell) as n from dbstat where name = ${name} and pagetype = 'leaf'`.execute(db)).rows[0]!.n)).toBe(2);
      const plan = (await sql<{ detail: string }>`explain query plan select * from messages where session_key = ${key} and kind = 'compaction' order by id desc limit 1`.execute(db)).rows.map((x) => x.detail).join(' | ');
      expect(plan).toMatch(/USING INDEX messages_compaction/);
    } else {
      const plan = await db.transaction().execute(async (tx) => {
        await sql`set local enable_seqscan = off`.execute(tx);
        await sql`set local plan_cache_mode = force_generic_plan`.execute(tx);
        return (await sql<{ 'QUERY PLAN': string }>`explain select * from messages where session_key = ${key} and kind = 'compaction' order by id desc limit 1`.execute(tx)).rows.map((x) => x['QUERY PLAN']).join(' | ');
      });
      expect(plan).toMatch(/messages_compaction/);
    }
  });
});
