// status on PostgreSQL (the cluster's run figures) at scale: ended runs come from counts a trigger keeps (0019_scale),
// not a GROUP BY over every run, and they match the runs table however rows change. PostgreSQL only (TEST_STORE=postgres).
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness';
import { onPostgresPass } from '../testing/store-under-test';

type Status = { activeRuns: number; runs: { ok: number; error: number; interrupted: number } };

describe.runIf(onPostgresPass())('status run counts on PostgreSQL', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.close());

  const grouped = async () => {
    const rows = await s.rt.store.db.selectFrom('runs').select(['status', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('status').execute();
    const n = (st: string) => Number(rows.find((r) => r.status === st)?.n ?? 0);
    return { ok: n('ok'), error: n('error'), interrupted: n('interrupted') };
  };

  it('match the runs table through inserts, status changes and deletes, and status reads them', async () => {
    for (const m of ['/reply one', '/reply two', '/fail boom']) await s.rpc('agent.wait', { runId: (await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:counts', message: m })).runId });
    const db = s.rt.store.db;
    const at = new Date().toISOString();
    for (const [id, st] of [['raw-1', 'ok'], ['raw-2', 'error'], ['raw-3', 'queued']] as const)
      await sql`insert into runs (id, session_key, status, input, queue_mode, created_at, last_seq) values (${id}, 'agent:main:counts', ${st}, '{}', 'collect', ${at}, 0)`.execute(db);
    await sql`update runs set status = 'interrupted' where id = 'raw-3'`.execute(db);
    await sql`update runs set status = 'error' where id = 'raw-1'`.execute(db);
    await sql`delete from runs where id = 'raw-2'`.execute(db);
    const want = await grouped();
    expect(want.ok + want.error + want.interrupted).toBeGreaterThan(2);
    const status = await s.rpc<Status>('status', {});
    expect(status.runs).toEqual(want);
  });

  it('status reads the kept counts, not a count over every run', async () => {
    await sql`insert into run_counts (status, shard, n) values ('ok', 0, 1000) on conflict (status, shard) do update set n = run_counts.n + 1000`.execute(s.rt.store.db);
    const want = await grouped();
    expect((await s.rpc<Status>('status', {})).runs.ok).toBe(want.ok + 1000);
  });
});
