// How the store's statements are planned on PostgreSQL (pg-plans.ts): its connections never JIT-compile a statement, and a turn's two statements are planned once per connection (generic plans), not at every turn.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { DbHandle } from './db';
import { startTestServer, type TestServer } from '../testing/harness';
import { onPostgresPass } from '../testing/store-under-test';

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
    const { pool } = (s.rt.store as unknown as { handle: DbHandle }).handle.pg!;
    const STATEMENTS = [/^\s*with q as \(select queue_mode/, /^\s*with f as \(select key from sessions/];
    /** Every connection of the pool at once (each reads its own prepared statements). */
    const prepared = async () => {
      const clients = await Promise.all(Array.from({ length: pool.options.max ?? 10 }, () => pool.connect()));
      try {
        const rows: Array<{ statement: string; generic_plans: string; custom_plans: string }> = [];
        for (const c of clients) rows.push(...(await c.query('select statement, generic_plans, custom_plans from pg_prepared_statements')).rows);
        return rows;
      } finally {
        for (const c of clients) c.release();
      }
    };
    const runs = (r: { generic_plans: string; custom_plans: string }) => Number(r.generic_plans) + Number(r.custom_plans);
    let rows: Awaited<ReturnType<typeof prepared>> = [];
    for (let turn = 0; turn < 120; turn++) {
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:plans', message: `hello ${turn}` });
      await vi.waitUntil(async () => (await s.rt.store.getRun(runId))?.status === 'ok');
      await s.rpc('agent.wait', { runId, timeoutMs: 5000 });
      if (turn < 6 || turn % 6 !== 0) continue;
      rows = await prepared();
      if (STATEMENTS.every((st) => rows.some((r) => st.test(r.statement) && runs(r) > 5))) break;
    }
    for (const st of STATEMENTS) {
      const mine = rows.filter((r) => st.test(r.statement));
      const busy = mine.filter((r) => runs(r) > 5);
      expect(busy.length, JSON.stringify(mine)).toBeGreaterThan(0);
      for (const r of busy) expect(Number(r.generic_plans), JSON.stringify(r)).toBeGreaterThan(0);
      for (const r of mine) expect(Number(r.custom_plans), JSON.stringify(r)).toBeLessThanOrEqual(5);
    }
  }, 120_000);
});
