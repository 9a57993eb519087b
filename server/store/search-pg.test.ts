// sessions.search on PostgreSQL finds the newest matches by id-range steps: the same answer as one statement over every match, reading only the window's rows.
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness';
import { onPostgresPass } from '../testing/store-under-test';
import type { Database } from './schema';
import { type DbHandle, withPreparedStatements } from './db';
import { newestMatches, searchPostgres } from './search-pg';

const WINDOW = 20;
const ROWS = 40_000;

describe.runIf(onPostgresPass())('sessions.search on PostgreSQL (search-pg.ts)', () => {
  let s: TestServer;
  let db: Kysely<Database>;
  beforeAll(async () => {
    s = await startTestServer();
    db = s.rt.store.db;
    // 40,000 messages, wide enough for ~20 a heap page; "zebu" in every 50th (twice in every 150th, so it ranks
    // higher), in agent ops's session for every 400th; "yak" in 5 old messages only.
    await sql`insert into messages (session_key, role, kind, content, created_at, author_type, author_id)
      select case when i % 400 = 0 then 'agent:ops:bulk' else 'agent:main:bulk' end, 'user', 'message',
        repeat('filler words ', 20) || case when i % 150 = 0 then ' zebu zebu' when i % 50 = 0 then ' zebu' else '' end
          || case when i in (7, 70, 700, 7000, 8000) then ' yak' else '' end,
        '2026-01-01T00:00:00.000Z', 'user', 'user'
      from generate_series(1, ${ROWS}) i`.execute(db);
    await sql`analyze message_search`.execute(db);
    // The BRIN ranges filled by the insert, summarized as autovacuum does (0022_pgsearch's autosummarize).
    await sql`select brin_summarize_new_values('message_search_id_brin')`.execute(db);
  }, 120_000);
  afterAll(() => s?.close());

  /** The definition: ts_rank among the newest `window` matches, newest first among equals (one statement). */
  const reference = async (tsquery: string, limit: number, offset: number, agentPrefix?: string) =>
    (
      await sql<{ id: string }>`
        WITH newest AS (
          SELECT s.message_id, ts_rank(s.tsv, q) AS score FROM message_search s, to_tsquery('simple', ${tsquery}) q
          WHERE s.tsv @@ q ORDER BY s.message_id DESC LIMIT ${WINDOW}
        )
        SELECT m.id FROM newest n JOIN messages m ON m.id = n.message_id
        ${agentPrefix ? sql`WHERE m.session_key LIKE ${agentPrefix}` : sql``}
        ORDER BY n.score DESC, m.id DESC LIMIT ${limit} OFFSET ${offset}`.execute(db)
    ).rows.map((r) => Number(r.id));
  const search = async (terms: string[], limit: number, offset: number, agentPrefix?: string, on: Kysely<Database> = db) =>
    (await searchPostgres(on, { terms, limit, offset, window: WINDOW, snippetWords: 16, firstSpan: 500, ...(agentPrefix ? { agentPrefix } : {}) })).map((h) => h.id);

  it('answers as ranking the newest window in one statement does: pages, agent filter, a word older than every step', async () => {
    for (const [limit, offset] of [[5, 0], [5, 5], [10, 15], [5, 20]] as const) {
      const got = await search(['zebu'], limit, offset);
      expect(got).toEqual(await reference('zebu:*', limit, offset));
    }
    expect((await search(['zebu'], 10, 0)).length).toBe(10);
    const ops = await search(['zebu'], 20, 0, 'agent:ops:%');
    expect(ops.length).toBeGreaterThan(0);
    expect(ops).toEqual(await reference('zebu:*', 20, 0, 'agent:ops:%'));
    // "yak" is only in old messages: the steps reach back to them, best (and then newest) first.
    const yak = await search(['yak'], 10, 0);
    expect(yak).toHaveLength(5);
    expect(yak).toEqual(await reference('yak:*', 10, 0));
    expect(await search(['filler', 'gnu'], 10, 0)).toEqual([]);
  });

  it('reads from the heap about the window\'s matches only, not every match nor every row down to the window', async () => {
    // 800 matches spread over ~2,000 heap pages; the newest 20 lie in the newest 1,000 rows (~50 pages). Heap pages
    // read, counted by PostgreSQL for this transaction (the counter also holds this connection's counts not yet sent
    // to the statistics, hence the difference). At 10,000,000 messages the planner takes the GIN index for such a
    // word rather than walking the primary key down to the window; on 40,000 rows it would walk, so the walk is ruled
    // out here as size rules it out there.
    const newest = Number((await sql<{ max: string }>`SELECT max(message_id) AS max FROM message_search`.execute(db)).rows[0]!.max);
    const { found, pages } = await db.transaction().execute(async (trx) => {
      await sql`SET LOCAL enable_indexscan = off`.execute(trx);
      const read = async () => Number((await sql<{ n: string }>`SELECT pg_stat_get_xact_blocks_fetched('message_search'::regclass) AS n`.execute(trx)).rows[0]!.n);
      const before = await read();
      const found = await newestMatches(trx, 'zebu:*', WINDOW, 500, newest);
      return { found, pages: (await read()) - before };
    });
    const want = await sql<{ id: string }>`SELECT message_id AS id FROM message_search WHERE tsv @@ to_tsquery('simple', 'zebu:*') ORDER BY message_id DESC LIMIT ${WINDOW}`.execute(db);
    expect(found.map((f) => f.id)).toEqual(want.rows.map((r) => Number(r.id)));
    expect(pages).toBeLessThan(4 * WINDOW); // every match's page: 800
  });

  it('plans every search statement for its own values: none is a named prepared statement (whose generic plan walked every row)', async () => {
    // The store's own statement naming over one connection, to read that connection's prepared statements.
    const { connect } = (s.rt.store as unknown as { handle: DbHandle }).handle.pg!;
    const pool = new pg.Pool({ ...connect, max: 1 });
    withPreparedStatements(pool);
    const one = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    try {
      // More runs than PostgreSQL's five custom plans before it may switch a prepared statement to its generic plan.
      for (let i = 0; i < 7; i++) await search(['zebu'], 5, i, 'agent:ops:%', one);
      expect(await search(['zebu'], 10, 0, undefined, one)).toEqual(await reference('zebu:*', 10, 0));
      await sql`select ${1}::int as prepared_here`.execute(one);
      const prepared = (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(one)).rows.map((r) => r.statement);
      expect(prepared.some((t) => t.includes('prepared_here'))).toBe(true);
      expect(prepared.filter((t) => /message_search|session_key LIKE/.test(t))).toEqual([]);
    } finally {
      await one.destroy();
    }
  });
});
