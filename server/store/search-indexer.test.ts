// SQLite's full-text index written in batches behind the writes: not in the writing transaction, caught up before
// every search, by its own timer otherwise, across a restart, with changes and deletes before indexing.
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { tmpDataDir } from '../testing/harness';
import { openDatabase, type DbHandle } from './db';
import { RANK_WINDOW, MAX_PREFIX_TERMS } from './search';
import { MERGE_PAGES, SqliteSearchIndexer } from './search-indexer';
import type { SqliteSearchQuery } from './search-sqlite';

const q = (query: string): SqliteSearchQuery => ({ terms: query.split(' '), limit: 50, offset: 0, window: RANK_WINDOW, maxExpansion: MAX_PREFIX_TERMS, scanTerms: 20_000, snippetWords: 16 });
const handles: DbHandle[] = [];
afterEach(async () => {
  for (const h of handles.splice(0)) await h.close();
});
async function open(dataDir = tmpDataDir()) {
  const h = await openDatabase({ dataDir });
  handles.push(h);
  return { h, dataDir };
}
const insert = (h: DbHandle, sessionKey: string, content: string) =>
  sql<{ id: number }>`insert into messages (session_key, role, kind, content, created_at, author_type, author_id)
    values (${sessionKey}, 'user', 'message', ${content}, '2026-01-01T00:00:00.000Z', 'user', 'user') returning id`.execute(h.db).then((r) => r.rows[0]!.id);
const indexedIds = async (h: DbHandle) => (await sql<{ id: number }>`select rowid as id from messages_fts order by rowid`.execute(h.db)).rows.map((r) => r.id);
const keysOf = async (h: DbHandle, words: string) => (await h.sqliteSearch!.search(q(words))).map((x) => x.session_key).sort();

describe('SQLite search index in batches', () => {
  it('leaves the index out of the writing transaction and catches up before a search', async () => {
    const { h } = await open();
    const a = await insert(h, 'agent:main:a', 'a numbat at noon');
    const b = await insert(h, 'agent:main:b', 'numbats at night');
    // Written, not indexed yet: the transaction that inserted them wrote no index page (the fix).
    expect(await indexedIds(h)).toEqual([]);
    expect(await keysOf(h, 'numbat')).toEqual(['agent:main:a', 'agent:main:b']);
    expect(await indexedIds(h)).toEqual([a, b]);
    expect((await sql<{ upto: number }>`select upto from search_indexed`.execute(h.db)).rows[0]!.upto).toBe(b);
  });

  it('indexes by its own timer, without a search', async () => {
    const { h } = await open();
    const id = await insert(h, 'agent:main:t', 'quoll');
    await vi.waitFor(async () => expect(await indexedIds(h)).toEqual([id]), { timeout: 5_000, interval: 50 });
  });

  it('indexes a message changed before it was indexed with its new words, once; a deleted one not at all', async () => {
    const { h } = await open();
    const a = await insert(h, 'agent:main:a', 'old words here');
    const b = await insert(h, 'agent:main:b', 'to be deleted');
    await sql`update messages set content = 'bilby tracks' where id = ${a}`.execute(h.db);
    await sql`delete from messages where id = ${b}`.execute(h.db);
    expect(await keysOf(h, 'bilby')).toEqual(['agent:main:a']);
    expect(await keysOf(h, 'old')).toEqual([]);
    expect(await keysOf(h, 'deleted')).toEqual([]);
    expect(await indexedIds(h)).toEqual([a]);
    // Changed after it was indexed: the update trigger re-indexes it at once.
    await sql`update messages set content = 'potoroo now' where id = ${a}`.execute(h.db);
    expect(await keysOf(h, 'potoroo')).toEqual(['agent:main:a']);
    expect(await keysOf(h, 'bilby')).toEqual([]);
  });

  it('indexes a backlog in batches, and what a closed store left behind after it opens again', async () => {
    const { h, dataDir } = await open();
    const ids: number[] = [];
    for (let i = 0; i < 25; i++) ids.push(await insert(h, `agent:main:k${i % 3}`, `wallaby number${i}`));
    const own = new SqliteSearchIndexer(h.sqlite!, h.db, { batch: 10 });
    await own.catchUp();
    expect({ last: own.lastIndexed, indexed: await indexedIds(h) }).toEqual({ last: ids[24], indexed: ids });
    const more = await insert(h, 'agent:main:later', 'wallaby left behind');
    handles.splice(handles.indexOf(h), 1);
    await h.close();
    const file = path.join(dataDir, 'crosstalk.sqlite');
    const raw = new BetterSqlite3(file, { readonly: true });
    expect(raw.prepare('select count(*) as c from messages_fts where rowid = ?').get(more)).toEqual({ c: 0 });
    raw.close();
    const { h: again } = await open(dataDir);
    await vi.waitFor(async () => expect((await indexedIds(again)).at(-1)).toBe(more), { timeout: 5_000, interval: 50 });
    expect(await keysOf(again, 'wallaby')).toHaveLength(26);
  });

  it('merges the index in steps of MERGE_PAGES pages owed by its batches, never inside a write (FTS5 automerge off)', async () => {
    const { h } = await open();
    h.searchIndexer!.close(); // this test's indexer alone
    const raw = h.sqlite!;
    expect(raw.prepare(`select v from messages_fts_config where k = 'automerge'`).pluck().get()).toBe(0);
    // No time budget: each tick does all its work, whatever the machine's load (a cut-off tick goes on by itself).
    const own = new SqliteSearchIndexer(raw, h.db, { batch: 4, budgetMs: Infinity });
    const insertRow = raw.prepare(`insert into messages (session_key, role, kind, content, created_at, author_type, author_id)
      values ('agent:main:m', 'user', 'message', ?, '2026-01-01T00:00:00.000Z', 'user', 'user')`);
    const pages = raw.prepare('select id from messages_fts_data').pluck();
    let most = 0;
    for (let b = 0; b < 400; b++) {
      for (let i = 0; i < 4; i++) insertRow.run(Array.from({ length: 60 }, (_, k) => `w${(b * 37 + i * 11 + k * 7) % 3000}`).join(' '));
      const before = new Set(pages.all());
      await own.tick(); // one batch (its segment), then the merge step it owes
      most = Math.max(most, (pages.all() as number[]).filter((p) => !before.has(p)).length);
    }
    // A batch's own segment is 1–3 pages here. With FTS5's own merging a batch wrote 50 pages now and then (64 a level
    // at 10,000,000 messages); with no merging at all the segments pile up to FTS5's crisis merge (10 here).
    const segments = raw.prepare('select count(distinct segid) from messages_fts_idx').pluck().get() as number;
    expect({ mostPagesInOneBatch: most <= MERGE_PAGES + 8, segments: segments <= 6 }).toEqual({ mostPagesInOneBatch: true, segments: true });
    expect((await h.sqliteSearch!.search(q('w42'))).length).toBeGreaterThan(0);
  });
});
