// status.usage at scale (0019_scale): the totals kept by triggers add up to every model_usage row however it was
// written (the runtime, another process's raw insert, an update, a delete), and status reads them, not a SUM over
// every step. Runs on SQLite, and on PostgreSQL with TEST_STORE=postgres.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness';

type Status = { usage?: { inputTokens: number; outputTokens: number; costUsd: number } };

describe('usage totals kept by triggers', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ config: { models: { scripted: { inputPerMTok: 2, outputPerMTok: 10 } } } });
  });
  afterAll(() => s.close());

  const sums = async () => {
    const db = s.rt.store.db;
    const all = await db.selectFrom('model_usage').select((eb) => [eb.fn.sum<number>('input_tokens').as('i'), eb.fn.sum<number>('output_tokens').as('o'), eb.fn.sum<number>('cost_usd').as('c')]).executeTakeFirst();
    const kept = await db.selectFrom('usage_totals').select((eb) => [eb.fn.sum<number>('input_tokens').as('i'), eb.fn.sum<number>('output_tokens').as('o'), eb.fn.sum<number>('cost_usd').as('c')]).executeTakeFirst();
    return { all: [Number(all?.i ?? 0), Number(all?.o ?? 0), Number(all?.c ?? 0)], kept: [Number(kept?.i ?? 0), Number(kept?.o ?? 0), Number(kept?.c ?? 0)] };
  };

  it('follow every insert, update and delete of model_usage, and status reports them', async () => {
    for (const k of ['a', 'b', 'c']) await s.rpc('agent.wait', { runId: (await s.rpc<{ runId: string }>('agent', { sessionKey: `agent:main:totals-${k}`, message: `/reply counted ${k}` })).runId });
    let t = await sums();
    expect(t.all[0]).toBeGreaterThan(0);
    expect(t.kept[0]).toBe(t.all[0]);
    expect(t.kept[1]).toBe(t.all[1]);
    expect(t.kept[2]).toBeCloseTo(t.all[2], 9);

    // Another process's writes, straight into the table.
    const db = s.rt.store.db;
    const at = new Date().toISOString();
    for (let i = 0; i < 20; i++)
      await sql`insert into model_usage (run_id, session_key, agent_id, model, kind, input_tokens, output_tokens, cached_tokens, cost_usd, priced, created_at)
        values (${`raw-${i}`}, 'agent:main:totals-raw', 'main', 'scripted', 'step', ${1000 + i}, ${100 + i}, 0, ${0.5 + i / 100}, 1, ${at})`.execute(db);
    await sql`update model_usage set input_tokens = input_tokens + 7, cost_usd = cost_usd + 0.25 where run_id = 'raw-3'`.execute(db);
    await sql`delete from model_usage where run_id in ('raw-5', 'raw-6')`.execute(db);
    t = await sums();
    expect(t.kept[0]).toBe(t.all[0]);
    expect(t.kept[1]).toBe(t.all[1]);
    expect(t.kept[2]).toBeCloseTo(t.all[2], 9);

    const status = await s.rpc<Status>('status', {});
    expect(status.usage).toEqual({ inputTokens: t.all[0], outputTokens: t.all[1], costUsd: Math.round(t.all[2] * 1e6) / 1e6 });
  });

  it('status reads the kept totals (a few rows), not a SUM over every model step', async () => {
    const db = s.rt.store.db;
    // Move the kept totals away from the rows' sum: status must show the kept figure.
    await sql`update usage_totals set input_tokens = input_tokens + 1000000 where shard = (select min(shard) from usage_totals)`.execute(db);
    const t = await sums();
    expect(t.kept[0]).toBe(t.all[0] + 1_000_000);
    const status = await s.rpc<Status>('status', {});
    expect(status.usage?.inputTokens).toBe(t.kept[0]);
    await sql`update usage_totals set input_tokens = input_tokens - 1000000 where shard = (select min(shard) from usage_totals)`.execute(db);
  });
});
