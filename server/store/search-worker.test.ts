// SQLite search off the event loop: the worker answers as the in-thread search does, the main thread runs meanwhile, a stuck search is stopped.
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { tmpDataDir } from '../testing/harness';
import { openDatabase, type DbHandle } from './db';
import { MAX_PREFIX_TERMS, RANK_WINDOW } from './search';
import { SEARCH_TERMS_BATCH } from './migrations-search';
import { inThreadSqliteSearch, type SqliteSearchQuery } from './search-sqlite';
import { SqliteSearcher } from './search-worker';

let h: DbHandle;
let file: string;
const q = (query: string, o: Partial<SqliteSearchQuery> = {}): SqliteSearchQuery => ({
  terms: query.split(' '),
  limit: 20,
  offset: 0,
  window: RANK_WINDOW,
  maxExpansion: MAX_PREFIX_TERMS,
  scanTerms: 20_000,
  snippetWords: 16,
  ...o,
});
const insert = (sessionKey: string, content: string, toolResult: string | null = null) =>
  sql`insert into messages (session_key, role, kind, content, created_at, author_type, author_id, tool_result)
    values (${sessionKey}, 'user', 'message', ${content}, '2026-01-01T00:00:00.000Z', 'user', 'user', ${toolResult})`.execute(h.db);

beforeAll(async () => {
  const dataDir = tmpDataDir();
  h = await openDatabase({ dataDir });
  file = path.join(dataDir, 'crosstalk.sqlite');
  await insert('agent:main:a', 'the Café serves crème brûlée');
  await insert('agent:ops:b', 'cafeteria menu', JSON.stringify({ items: ['wombat stew', 42] }));
  await insert('agent:main:c', 'a wombat in the cafe, a wombat at the door');
  // More words of one prefix than a prefix expands into: "zq0" … "zq69", "zq7" the most common.
  for (let i = 0; i < MAX_PREFIX_TERMS + 6; i++) await insert('agent:main:z', `zq${i} filler`);
  for (let i = 0; i < 3; i++) await insert('agent:main:z', 'zq7 again');
});
afterAll(async () => {
  await h?.close();
});

describe('SQLite search worker', () => {
  it('keeps the word list (search_terms) by trigger, a batch at a time, and finds the words still waiting', async () => {
    const n = async (term: string) => (await sql<{ n: number }>`select n from search_terms where term = ${term}`.execute(h.db)).rows[0]?.n;
    // The index (and with it the word list's waiting rows) follows the messages in batches (./search-indexer).
    const waiting = async () => (await h.searchIndexer!.catchUp(), Number((await sql<{ c: number }>`select count(*) as c from search_terms_pending`.execute(h.db)).rows[0]!.c));
    // 76 messages so far: the first SEARCH_TERMS_BATCH counted (folded as the index folds: "Café" is "cafe"), the rest waiting.
    expect({ waiting: await waiting(), cafe: await n('cafe'), wombat: await n('wombat'), n42: await n('42') }).toEqual({ cafe: 2, wombat: 2, n42: 1, waiting: 76 - SEARCH_TERMS_BATCH });
    await sql`update messages set content = 'now a quokka' where session_key = 'agent:main:a'`.execute(h.db);
    expect(await n('quokka')).toBeUndefined();
    expect((await h.sqliteSearch!.search(q('quok'))).map((x) => x.session_key)).toEqual(['agent:main:a']);
    for (let i = 0; i < SEARCH_TERMS_BATCH; i++) await insert('agent:main:y', `batch ${i}`);
    expect({ waiting: await waiting(), quokka: await n('quokka') }).toEqual({ quokka: 1, waiting: 76 + 1 + SEARCH_TERMS_BATCH - 2 * SEARCH_TERMS_BATCH });
  });

  it('answers in the worker as the same search in this thread does (prefixes, agent filter, pages)', async () => {
    const local = inThreadSqliteSearch(new BetterSqlite3(file, { readonly: true }));
    const cases = [q('wombat'), q('caf'), q('cafe wom'), q('wombat', { agentPrefix: 'agent:ops:' }), q('zq', { limit: 2, offset: 1 }), q('nothinghere')];
    for (const c of cases) expect({ c, hits: await h.sqliteSearch!.search(c) }).toEqual({ c, hits: local(c) });
    expect((await h.sqliteSearch!.search(q('wom'))).map((x) => x.session_key).sort()).toEqual(['agent:main:c', 'agent:ops:b']);
    const best = (await h.sqliteSearch!.search(q('wombat')))[0]!;
    expect({ key: best.session_key, snippet: best.snippet.trim() }).toEqual({ key: 'agent:main:c', snippet: 'a wombat in the cafe, a wombat at the door' });
    expect(h.sqliteSearch!.started).toBe(1);
  });

  it('expands a prefix into its most common words only, the typed word always among them', async () => {
    const zq = await h.sqliteSearch!.search(q('zq', { limit: 200 }));
    expect(zq.length).toBeLessThan(MAX_PREFIX_TERMS + 6 + 3);
    expect(zq.filter((x) => x.snippet.trim() === 'zq7 again')).toHaveLength(3);
    // "zq69" is among the rarest of the prefix "zq", yet found when typed out (its own prefix).
    expect((await h.sqliteSearch!.search(q('zq69'))).map((x) => x.snippet.trim())).toEqual(['zq69 filler']);
  });

  it('leaves the event loop free while a search runs', async () => {
    const gate = new Int32Array(new SharedArrayBuffer(4));
    Atomics.store(gate, 0, 1);
    await h.searchIndexer!.catchUp(); // a searcher of its own (no catching up before its searches)
    const searcher = new SqliteSearcher(file, { gate });
    try {
      let settled = false;
      const pending = searcher.search(q('wombat')).finally(() => (settled = true));
      // The search is held in the worker; this thread's timers still fire.
      let fired = false;
      await new Promise<void>((r) => setTimeout(() => r(void (fired = true)), 50));
      expect({ fired, settled }).toEqual({ fired: true, settled: false });
      Atomics.store(gate, 0, 0);
      Atomics.notify(gate, 0);
      expect((await pending).map((x) => x.session_key)).toEqual(['agent:main:c', 'agent:ops:b']);
    } finally {
      await searcher.close();
    }
  });

  it('stops a search past its time bound with a timeout error and answers the next one from a new thread', async () => {
    const gate = new Int32Array(new SharedArrayBuffer(4));
    await h.searchIndexer!.catchUp();
    const searcher = new SqliteSearcher(file, { gate, timeoutMs: 200 });
    try {
      expect((await searcher.search(q('wombat'))).length).toBe(2);
      Atomics.store(gate, 0, 1);
      await expect(searcher.search(q('wombat'))).rejects.toMatchObject({ code: 'timeout' });
      Atomics.store(gate, 0, 0);
      expect((await searcher.search(q('wombat'))).length).toBe(2);
      expect(searcher.started).toBe(2);
    } finally {
      await searcher.close();
    }
  });

  it('answers from what the index holds when it cannot catch up first', async () => {
    await h.searchIndexer!.catchUp();
    const searcher = new SqliteSearcher(file, { beforeSearch: () => Promise.reject(new Error('database is locked')) });
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      expect((await searcher.search(q('wombat'))).map((x) => x.session_key)).toEqual(['agent:main:c', 'agent:ops:b']);
      expect(warn).toHaveBeenCalledTimes(1);
    } finally {
      warn.mockRestore();
      await searcher.close();
    }
  });

  it('searches in this thread when the worker cannot start (no better-sqlite3 where it looks)', async () => {
    await h.searchIndexer!.catchUp();
    const searcher = new SqliteSearcher(file, { moduleBases: ['/nonexistent/index.js'] });
    try {
      const local = inThreadSqliteSearch(new BetterSqlite3(file, { readonly: true }));
      expect(await searcher.search(q('wombat'))).toEqual(local(q('wombat')));
      expect(await searcher.search(q('caf'))).toEqual(local(q('caf')));
    } finally {
      await searcher.close();
    }
  });
});
