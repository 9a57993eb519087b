// runs.board at scale (issue 22 item 7): parentChains (also approvals.list) walks every tree up in one statement, each
// step a lookup by key (not one query per session and ancestor — the board's 200 items made that 600 round trips — nor
// one per level); the board reads in two rounds of four statements, each group newest first from the status index.
import { CompiledQuery, type KyselyPlugin, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/store';
import { startTestServer, type TestServer } from '../testing/harness';
import { runsBoard } from './board';
import { parentChains } from './room';
import { onPostgresPass } from '../testing/store-under-test';

describe('parentChains', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.close());

  it('gives root-first chains three deep, in one statement that looks each parent up by key', async () => {
    const db = s.rt.store.db;
    const at = new Date().toISOString();
    const add = (key: string, parent: string | null, depth: number) =>
      sql`insert into sessions (key, agent_id, kind, spawn_depth, parent_key, created_at, last_activity_at, message_count, bytes, status)
        values (${key}, ${key.split(':')[1]!}, ${parent ? 'subagent' : 'main'}, ${depth}, ${parent}, ${at}, ${at}, 0, 0, 'idle')`.execute(db);
    const keys: string[] = [];
    for (let t = 0; t < 10; t++) {
      const root = `agent:main:pc-${t}`;
      await add(root, null, 0);
      keys.push(root);
      for (let c = 0; c < 3; c++) {
        const child = `agent:researcher:pc-${t}-${c}`;
        await add(child, root, 1);
        keys.push(child);
        for (let g = 0; g < 2; g++) {
          const grand = `agent:writer:pc-${t}-${c}-${g}`;
          await add(grand, child, 2);
          keys.push(grand);
        }
      }
    }
    // A cycle in bad data ends, it does not hang.
    await add('agent:main:loop-a', 'agent:main:loop-b', 1);
    await add('agent:main:loop-b', 'agent:main:loop-a', 1);

    const { counted, statements } = capture(s.rt.store);
    const chains = await parentChains(counted, [...keys, 'agent:main:loop-a', 'agent:main:missing']);
    expect(chains.get('agent:writer:pc-3-1-0')).toEqual(['agent:main:pc-3', 'agent:researcher:pc-3-1', 'agent:writer:pc-3-1-0']);
    expect(chains.get('agent:researcher:pc-9-2')).toEqual(['agent:main:pc-9', 'agent:researcher:pc-9-2']);
    expect(chains.get('agent:main:pc-0')).toEqual(['agent:main:pc-0']);
    expect(chains.get('agent:main:missing')).toEqual(['agent:main:missing']);
    expect(chains.get('agent:main:loop-a')).toEqual(['agent:main:loop-b', 'agent:main:loop-a']);
    // 100 sessions three deep: one statement, not one per level (4) nor one per session.
    expect(statements).toHaveLength(1);
    // Each parent is found by its key: never the whole sessions table scanned (PostgreSQL hashed it for a join).
    const plan = await planOf(s.rt.store, statements[0]!);
    if (s.rt.store.dialect === 'sqlite') {
      expect(plan).toEqual(expect.arrayContaining([expect.stringMatching(/^SEARCH s USING INDEX sqlite_autoindex_sessions_1 \(key=\?\)/)]));
      expect(plan.filter((p) => /^SCAN (sessions|s)\b/.test(p))).toEqual([]);
    } else {
      expect(plan.join('\n')).toMatch(/Index Scan using sessions_pkey on sessions s/);
      expect(plan.join('\n')).not.toMatch(/Seq Scan on sessions|Hash Join|Merge Join|Nested Loop/);
    }
  });
  it('chunks a long key list (500 a statement)', async () => {
    const keys = Array.from({ length: 1200 }, (_, i) => `agent:main:none-${i}`);
    const { counted, statements } = capture(s.rt.store);
    const chains = await parentChains(counted, keys);
    expect(chains.get('agent:main:none-1199')).toEqual(['agent:main:none-1199']);
    expect(statements).toHaveLength(3);
  });
});

describe('runs.board reads', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.close());

  // The plan is read with SQLite's EXPLAIN QUERY PLAN (the same statements; PostgreSQL's EXPLAIN ANALYZE is in BENCHMARKS.md).
  it.skipIf(onPostgresPass())('reads each group newest first from the status index, never sorting every run of a status', async () => {
    const db = s.rt.store.db;
    const at = (i: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
    for (let i = 0; i < 30; i++)
      await sql`insert into runs (id, session_key, status, input, queue_mode, created_at, last_seq) values (${`b-${i}`}, 'agent:main:b', ${['ok', 'error', 'interrupted'][i % 3]!}, '{}', 'collect', ${at(i)}, 0)`.execute(db);
    const { counted, statements } = capture(s.rt.store);
    const board = await runsBoard(counted, { limit: 5 });
    expect(board.failed.map((r) => r.runId)).toEqual(['b-29', 'b-28', 'b-26', 'b-25', 'b-23']);
    expect(board.done.map((r) => r.runId)).toEqual(['b-27', 'b-24', 'b-21', 'b-18', 'b-15']);
    const reads = statements.filter((q) => /from "runs"/.test(q.sql) && /order by "runs"."created_at" desc/.test(q.sql));
    expect(reads.length).toBeGreaterThan(0);
    for (const q of reads) {
      const plan = await planOf(s.rt.store, q);
      expect({ sql: q.sql, plan }).not.toMatchObject({ plan: expect.arrayContaining([expect.stringContaining('TEMP B-TREE')]) });
      expect({ sql: q.sql, plan }).not.toMatchObject({ plan: expect.arrayContaining([expect.stringMatching(/^SCAN runs\b/)]) });
    }
  });

  it('reads the board in four statements: the runs of every status, the pending approvals with their runs, the dead deliveries, the parent chains', async () => {
    const db = s.rt.store.db;
    const at = (i: number) => new Date(Date.UTC(2026, 0, 2, 0, 0, i)).toISOString();
    await sql`insert into sessions (key, agent_id, kind, spawn_depth, parent_key, created_at, last_activity_at, message_count, bytes, status)
      values ('agent:main:st-root', 'main', 'main', 0, null, ${at(0)}, ${at(0)}, 0, 0, 'idle'), ('agent:writer:st-kid', 'writer', 'subagent', 1, 'agent:main:st-root', ${at(0)}, ${at(0)}, 0, 0, 'idle')`.execute(db);
    for (let i = 0; i < 12; i++)
      await sql`insert into runs (id, session_key, status, input, queue_mode, created_at, last_seq) values (${`st-${i}`}, 'agent:writer:st-kid', ${['ok', 'error', 'queued', 'interrupted'][i % 4]!}, '{}', 'collect', ${at(i)}, 0)`.execute(db);
    await sql`insert into model_usage (run_id, session_key, agent_id, model, kind, input_tokens, output_tokens, cached_tokens, cost_usd, priced, created_at)
      values ('st-8', 'agent:writer:st-kid', 'writer', 'm', 'step', 1, 1, 0, 0.25, 1, ${at(8)}), ('st-8', 'agent:writer:st-kid', 'writer', 'm', 'step', 1, 1, 0, 0.5, 1, ${at(9)})`.execute(db);
    await sql`insert into deliveries (id, kind, from_session, to_url, state, attempts, error_code, error_message, created_at, updated_at)
      values ('dlv_st', 'webhook', 'agent:main:st-root', 'https://x.example/h', 'dead', 5, 'internal', 'gone', ${at(20)}, ${at(20)})`.execute(db);
    const { counted, statements } = capture(s.rt.store);
    const board = await runsBoard(counted, { limit: 50 });
    const item = board.done.find((r) => r.runId === 'st-8')!;
    expect(item).toMatchObject({ costUsd: 0.75, parentChain: ['agent:main:st-root', 'agent:writer:st-kid'], agentId: 'writer' });
    expect(board.working.find((r) => r.runId === 'st-10')).toMatchObject({ status: 'queued', costUsd: 0 });
    expect(board.failed.find((r) => r.delivery?.deliveryId === 'dlv_st')).toMatchObject({ parentChain: ['agent:main:st-root'], status: 'dead' });
    // Was 13: a read per status (7), a query per tree level for the runs and again for the dead deliveries, the costs.
    expect(statements.map((q) => q.sql.replace(/\s+/g, ' ').slice(0, 60))).toHaveLength(4);
  });
});

/** The statements a store runs (each once, as sent), through a copy of it whose database records them. */
function capture(store: Store): { counted: Store; statements: CompiledQuery[] } {
  const statements: CompiledQuery[] = [];
  const built = new Map<unknown, CompiledQuery>();
  const plugin: KyselyPlugin = {
    // Subqueries pass here too: only what comes back as a result was a statement of its own.
    transformQuery: (a) => {
      built.set(a.queryId, store.db.getExecutor().compileQuery(a.node, a.queryId));
      return a.node;
    },
    transformResult: async (a) => {
      const q = built.get(a.queryId);
      if (q) statements.push(q);
      return a.result;
    },
  };
  return { counted: Object.create(store, { db: { value: store.db.withPlugin(plugin) } }) as Store, statements };
}

/** A statement's plan: SQLite's EXPLAIN QUERY PLAN details, or PostgreSQL's EXPLAIN lines. */
async function planOf(store: Store, q: CompiledQuery): Promise<string[]> {
  const text = store.dialect === 'sqlite' ? `explain query plan ${q.sql}` : `explain ${q.sql}`;
  const rows = (await store.db.executeQuery(CompiledQuery.raw(text, [...q.parameters]))).rows as Array<{ detail?: string; 'QUERY PLAN'?: string }>;
  return rows.map((r) => (r.detail ?? r['QUERY PLAN'] ?? '').trim());
}
