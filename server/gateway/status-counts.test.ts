// status on PostgreSQL (the cluster's run figures) at scale: ended runs come from counts a trigger keeps (0019_scale),
// not a GROUP BY over every run, and they match the runs table however rows change (PostgreSQL only); activeRuns means the same on both stores.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
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

  it('two transactions ending runs and recording usage at once never wait on each other (a row per backend, 0027)', async () => {
    const db = s.rt.store.db;
    const at = new Date().toISOString();
    const run = (id: string) => sql`insert into runs (id, session_key, status, input, queue_mode, created_at, last_seq) values (${id}, 'agent:main:shards', 'ok', '{}', 'collect', ${at}, 0)`;
    const usage = (runId: string) =>
      sql`insert into model_usage (run_id, session_key, agent_id, model, kind, input_tokens, output_tokens, cached_tokens, cost_usd, priced, created_at, root_run_id)
          values (${runId}, 'agent:main:shards', 'main', 'scripted', 'step', 1, 1, 0, 0, 0, ${at}, ${runId})`;
    const before = await grouped();
    type Conn = typeof db;
    const shard = async (c: Conn) => (await sql<{ s: number }>`select pg_backend_pid() % 1024 as s`.execute(c)).rows[0]!.s;
    // Another pooled connection than `a`, on another backend row: two backends whose pids agree modulo 1024 share a
    // row by design (they then wait on each other, as any two writers of one row do); that is not what this asks.
    const onAnotherShard = async (taken: number, fn: (c: Conn) => Promise<void>, tries = 3): Promise<void> =>
      db.connection().execute(async (c) => ((await shard(c)) !== taken || tries <= 1 ? fn(c) : onAnotherShard(taken, fn, tries - 1)));
    await db.connection().execute(async (a) => {
      await sql`begin`.execute(a);
      await run('shard-a').execute(a);
      await usage('shard-a').execute(a);
      // A second connection while the first holds its rows' locks: with rows picked by run id (16 of them), one of
      // 100 runs or 16 consecutive usage rows lands on the first's row and waits for its commit (here: lock_timeout).
      await onAnotherShard(await shard(a), async (b) => {
        await sql`begin`.execute(b);
        await sql`set local lock_timeout = '2s'`.execute(b);
        for (let i = 0; i < 100; i++) await run(`shard-b-${i}`).execute(b);
        for (let i = 0; i < 16; i++) await usage(`shard-b-${i}`).execute(b);
        await sql`commit`.execute(b);
      });
      await sql`commit`.execute(a);
    });
    expect((await grouped()).ok).toBe(before.ok + 101);
    expect((await s.rpc<Status>('status', {})).runs).toEqual(await grouped());
  });

  it('status reads the kept counts, not a count over every run', async () => {
    await sql`insert into run_counts (status, shard, n) values ('ok', 0, 1000) on conflict (status, shard) do update set n = run_counts.n + 1000`.execute(s.rt.store.db);
    const want = await grouped();
    expect((await s.rpc<Status>('status', {})).runs.ok).toBe(want.ok + 1000);
  });
});

describe('status.activeRuns', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.close());

  it('counts a run paused on an approval on both stores (before, on PostgreSQL: 0, where SQLite said 1)', async () => {
    const key = 'agent:main:active-paused';
    await s.rpc('agent', { sessionKey: key, message: '/tool exec {"command":"echo paused"}' });
    const approval = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals[0]);
    await until(async () => (await s.rt.store.db.selectFrom('runs').select('status').where('session_key', '=', key).executeTakeFirst())?.status === 'waiting_approval');
    expect((await s.rpc<Status & { pendingApprovals: number }>('status', {})).activeRuns).toBe(1);
    await s.rpc('approvals.resolve', { approvalId: approval.approvalId, decision: 'deny' });
    await until(async () => (await s.rpc<Status>('status', {})).activeRuns === 0);
  });
});
