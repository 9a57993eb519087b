// How the store's statements are planned on PostgreSQL (pg-plans.ts): its connections never JIT-compile a statement, and a turn's two statements are planned once per connection (generic plans), not at every turn.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { PoolClient } from 'pg';
import type { DbHandle } from './db';
import { startTestServer, type TestServer } from '../testing/harness';
import { onPostgresPass } from '../testing/store-under-test';

/** The turn's start and end statements, as pg_prepared_statements shows their text. */
const TURN_STATEMENTS = [/^\s*with q as \(select queue_mode/, /^\s*with f as \(select key from sessions/];
/** Every connection of the server's pool at once (a prepared statement and its plans belong to one connection). */
async function onEveryConnection<T>(s: TestServer, fn: (clients: PoolClient[]) => Promise<T>): Promise<T> {
  const { pool } = (s.rt.store as unknown as { handle: DbHandle }).handle.pg!;
  const clients = await Promise.all(Array.from({ length: pool.options.max ?? 10 }, () => pool.connect()));
  try {
    return await fn(clients);
  } finally {
    for (const c of clients) c.release();
  }
}

describe.runIf(onPostgresPass())('PostgreSQL plans (pg-plans.ts)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  }, 120_000);
  afterAll(() => s?.close());

  it('runs without JIT on every connection of the pool, so a generic plan costed past jit_above_cost is not compiled', async () => {
    const db = s.rt.store.db;
    // Several connections at once: each pooled one says so.
    const jit = await Promise.all(Array.from({ length: 4 }, () => db.transaction().execute(async (tx) => (await sql<{ jit: string }>`show jit`.execute(tx)).rows[0]!.jit)));
    expect(jit).toEqual(['off', 'off', 'off', 'off']);
    // A statement whose generic plan PostgreSQL costs far past jit_above_cost: its EXPLAIN ANALYZE has no JIT part.
    const plan = await db.transaction().execute(async (tx) => {
      await sql`set local plan_cache_mode = force_generic_plan`.execute(tx);
      await sql`set local jit_above_cost = 0`.execute(tx);
      await sql`prepare jit_probe(int) as select id from messages order by id desc limit $1`.execute(tx);
      const r = await sql<{ 'QUERY PLAN': unknown }>`explain (analyze, format json) execute jit_probe(5)`.execute(tx);
      await sql`deallocate jit_probe`.execute(tx);
      return JSON.stringify(r.rows[0]!['QUERY PLAN']);
    });
    expect(plan).not.toContain('"JIT"');
  });

  it("plans a turn's start and end statements once per connection: after PostgreSQL's five custom plans it runs their generic plan", async () => {
    // A statement PostgreSQL costs higher as a generic plan than as the custom ones (the run's end did, with a
    // generate_series over a parameter) is planned anew at every turn (0.7 ms of CPU): custom plans past five, no
    // generic one. Sequential turns on one session until one connection ran each statement more than five times (the
    // pool hands back its last idle connection, but on a busy machine the background's queries spread them).
    const prepared = () =>
      onEveryConnection(s, async (clients) => {
        const rows: Array<{ statement: string; generic_plans: string; custom_plans: string }> = [];
        for (const c of clients) rows.push(...(await c.query('select statement, generic_plans, custom_plans from pg_prepared_statements')).rows);
        return rows;
      });
    const runs = (r: { generic_plans: string; custom_plans: string }) => Number(r.generic_plans) + Number(r.custom_plans);
    let rows: Awaited<ReturnType<typeof prepared>> = [];
    for (let turn = 0; turn < 120; turn++) {
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:plans', message: `hello ${turn}` });
      await vi.waitUntil(async () => (await s.rt.store.getRun(runId))?.status === 'ok');
      await s.rpc('agent.wait', { runId, timeoutMs: 5000 });
      if (turn < 6 || turn % 6 !== 0) continue;
      rows = await prepared();
      if (TURN_STATEMENTS.every((st) => rows.some((r) => st.test(r.statement) && runs(r) > 5))) break;
    }
    for (const st of TURN_STATEMENTS) {
      const mine = rows.filter((r) => st.test(r.statement));
      const busy = mine.filter((r) => runs(r) > 5);
      expect(busy.length, JSON.stringify(mine)).toBeGreaterThan(0);
      for (const r of busy) expect(Number(r.generic_plans), JSON.stringify(r)).toBeGreaterThan(0);
      for (const r of mine) expect(Number(r.custom_plans), JSON.stringify(r)).toBeLessThanOrEqual(5);
    }
  }, 120_000);
});

// A server of its own: the plans PostgreSQL picks depend on what the tables hold when it plans (another session's
// turns before this one's made the end's check take `runs_status` for 'queued').
describe.runIf(onPostgresPass())('PostgreSQL plans of a session with a long history (0025_live_runs)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  }, 120_000);
  afterAll(() => s?.close());

  it("finds a session's live runs in the index of live runs, not among every run of the session or every live run", async () => {
    // A turn's start asks whether its session has a queued, running or waiting run, its end whether one is queued.
    // Through `runs_session_status` with the statuses as a filter, each asked read every run of the session: at 8,000
    // runs, 37% of a turn's database CPU (perf, bench/turn-cpu.ts --pg); through `runs_status`, every live run of
    // every session. The plans read here are the ones the store's own pooled connections run, generic (as after five
    // turns), for a session with 400 ended runs.
    const db = s.rt.store.db;
    const key = 'agent:main:long';
    const first = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'first' });
    await s.rpc('agent.wait', { runId: first.runId, timeoutMs: 5000 });
    await sql`insert into runs (id, session_key, status, input, queue_mode, created_at, last_seq)
      select 'old-' || i, session_key, 'ok', input, queue_mode, to_char(timestamp '2026-01-01' + i * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 0
      from runs, generate_series(1, 400) i where id = ${first.runId}`.execute(db);
    await sql`analyze runs`.execute(db);
    const plans: string[] = [];
    for (let turn = 0; turn < 60 && plans.length < TURN_STATEMENTS.length; turn++) {
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: `hello ${turn}` });
      await s.rpc('agent.wait', { runId, timeoutMs: 5000 });
      if (turn < 3) continue;
      plans.length = 0;
      await onEveryConnection(s, async (clients) => {
        for (const st of TURN_STATEMENTS) {
          for (const c of clients) {
            const p = (await c.query('select name, cardinality(parameter_types) as n, statement from pg_prepared_statements')).rows.find((r: { statement: string }) => st.test(r.statement));
            if (!p) continue;
            await c.query('set plan_cache_mode = force_generic_plan');
            try {
              const r = await c.query(`explain (format json) execute "${p.name}"(${Array(Number(p.n)).fill('null').join(', ')})`);
              plans.push(JSON.stringify(r.rows[0]['QUERY PLAN']));
            } finally {
              await c.query('reset plan_cache_mode');
            }
            break;
          }
        }
      });
    }
    expect(plans).toHaveLength(TURN_STATEMENTS.length);
    type Node = { 'Relation Name'?: string; 'Index Name'?: string; Filter?: string; 'Index Cond'?: string; Plans?: Node[] };
    const scans: Node[] = [];
    const walk = (n: Node) => {
      if (n['Relation Name'] === 'runs' && /session_key/.test(`${n.Filter ?? ''} ${n['Index Cond'] ?? ''}`)) scans.push(n);
      for (const c of n.Plans ?? []) walk(c);
    };
    for (const p of plans) walk((JSON.parse(p) as Array<{ Plan: Node }>)[0]!.Plan);
    expect(scans.length, JSON.stringify(scans.map((x) => [x['Index Name'], x.Filter, x['Index Cond']]))).toBeGreaterThanOrEqual(5); // the start's four reads of its session's runs, the end's one
    for (const n of scans) expect(n['Index Name'], JSON.stringify(n)).toBe('runs_session_live');
    const { n } = (await sql<{ n: number }>`select count(*)::int as n from runs where session_key = ${key}`.execute(db)).rows[0]!;
    expect(n).toBeGreaterThan(400);
  }, 120_000);
});
