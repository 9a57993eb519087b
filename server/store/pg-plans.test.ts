// How the store's statements are planned on PostgreSQL (pg-plans.ts): its connections never JIT-compile a statement.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
});
