// runs.board at scale: parentChains (also approvals.list) reads one tree level per query, not one query per session and
// ancestor (the board's 200 items over delegate trees made that 600 round trips), and each group is read newest first
// from the status index.
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

  it('gives root-first chains three deep, with one query per level', async () => {
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

    let queries = 0;
    const counter: KyselyPlugin = {
      transformQuery: (a) => {
        queries++;
        return a.node;
      },
      transformResult: async (a) => a.result,
    };
    const counted = Object.create(s.rt.store, { db: { value: db.withPlugin(counter) } }) as Store;
    const chains = await parentChains(counted, [...keys, 'agent:main:loop-a', 'agent:main:missing']);
    expect(chains.get('agent:writer:pc-3-1-0')).toEqual(['agent:main:pc-3', 'agent:researcher:pc-3-1', 'agent:writer:pc-3-1-0']);
    expect(chains.get('agent:researcher:pc-9-2')).toEqual(['agent:main:pc-9', 'agent:researcher:pc-9-2']);
    expect(chains.get('agent:main:pc-0')).toEqual(['agent:main:pc-0']);
    expect(chains.get('agent:main:missing')).toEqual(['agent:main:missing']);
    expect(chains.get('agent:main:loop-a')).toEqual(['agent:main:loop-b', 'agent:main:loop-a']);
    // 100 sessions three deep: a query per level (and one that finds no further parent), not one per session.
    expect(queries).toBeLessThanOrEqual(4);
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
    const compiled: CompiledQuery[] = [];
    const capture: KyselyPlugin = {
      transformQuery: (a) => {
        compiled.push(db.getExecutor().compileQuery(a.node, a.queryId));
        return a.node;
      },
      transformResult: async (a) => a.result,
    };
    const counted = Object.create(s.rt.store, { db: { value: db.withPlugin(capture) } }) as Store;
    const board = await runsBoard(counted, { limit: 5 });
    expect(board.failed.map((r) => r.runId)).toEqual(['b-29', 'b-28', 'b-26', 'b-25', 'b-23']);
    expect(board.done.map((r) => r.runId)).toEqual(['b-27', 'b-24', 'b-21', 'b-18', 'b-15']);
    const reads = compiled.filter((q) => /from "runs"/.test(q.sql) && /order by "created_at" desc/.test(q.sql));
    expect(reads.length).toBeGreaterThan(0);
    for (const q of reads) {
      const plan = (await db.executeQuery(CompiledQuery.raw(`explain query plan ${q.sql}`, [...q.parameters]))).rows as Array<{ detail: string }>;
      expect({ sql: q.sql, plan: plan.map((p) => p.detail) }).not.toMatchObject({ plan: expect.arrayContaining([expect.stringContaining('TEMP B-TREE')]) });
    }
  });
});
