// Full-text search over transcripts (CONTRACT §3 sessions.search): SQLite FTS5 and PostgreSQL full-text search behind one query.
import { type Kysely, sql } from 'kysely';
import type { DialectName } from './schema';
import type { Database } from './schema';
import { searchPostgres } from './search-pg';
import { sqliteBody, type SqliteSearchHit } from './search-sqlite';
import type { SqliteSearcher } from './search-worker';

/*
 * What is indexed: a message's text plus every string and number inside its tool arguments and result (not the JSON
 * syntax around them, so "a\nzebra" in a result is the words "a" and "zebra"). Triggers on `messages` keep the index in
 * step with every insert and delete, so the store's write path does not change and no writer can forget it.
 * Both dialects tokenize the same way (no stemming: unicode61 / 'simple'): every query word must match, the last
 * one as a prefix (search-as-you-type; on SQLite the prefix's MAX_PREFIX_TERMS most common words, see search-sqlite.ts).
 */

// PostgreSQL: the same, with jsonpath over every level.
const pgLeaves = (col: string) =>
  `coalesce((SELECT string_agg(v #>> '{}', E'\\n') FROM jsonb_path_query(coalesce(${col}, 'null')::jsonb, 'strict $.**') AS v WHERE jsonb_typeof(v) IN ('string', 'number')), '')`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function roomSearchMigration(db: Kysely<any>, dialect: DialectName): Promise<void> {
  if (dialect === 'sqlite') {
    await sql`CREATE VIRTUAL TABLE messages_fts USING fts5(body, tokenize = 'unicode61')`.execute(db);
    await sql.raw(`CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
      INSERT INTO messages_fts(rowid, body) VALUES (new.id, ${sqliteBody('new')}); END`).execute(db);
    await sql.raw(`CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
      DELETE FROM messages_fts WHERE rowid = old.id; END`).execute(db);
    await sql.raw(`CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, tool_args, tool_result ON messages BEGIN
      DELETE FROM messages_fts WHERE rowid = old.id;
      INSERT INTO messages_fts(rowid, body) VALUES (new.id, ${sqliteBody('new')}); END`).execute(db);
    await sql.raw(`INSERT INTO messages_fts(rowid, body) SELECT m.id, ${sqliteBody('m')} FROM messages m`).execute(db);
    return;
  }
  await sql`CREATE TABLE message_search (message_id bigint PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE, body text NOT NULL)`.execute(db);
  await sql`CREATE INDEX message_search_fts ON message_search USING gin (to_tsvector('simple', body))`.execute(db);
  await sql.raw(`CREATE OR REPLACE FUNCTION crosstalk_message_search_index() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO message_search (message_id, body)
        VALUES (NEW.id, NEW.content || E'\\n' || ${pgLeaves('NEW.tool_args')} || E'\\n' || ${pgLeaves('NEW.tool_result')})
        ON CONFLICT (message_id) DO UPDATE SET body = EXCLUDED.body;
      RETURN NULL;
    END $$`).execute(db);
  await sql`CREATE TRIGGER messages_search_index AFTER INSERT OR UPDATE OF content, tool_args, tool_result ON messages
    FOR EACH ROW EXECUTE FUNCTION crosstalk_message_search_index()`.execute(db);
  await sql.raw(`INSERT INTO message_search (message_id, body)
    SELECT m.id, m.content || E'\\n' || ${pgLeaves('m.tool_args')} || E'\\n' || ${pgLeaves('m.tool_result')} FROM messages m`).execute(db);
}

/** The words of a query, as both engines tokenize them (letters and digits; everything else separates). */
export function queryTerms(query: string): string[] {
  return (query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 16);
}

/** A search hit as both stores' queries return it (the SQLite worker's shape). */
export type SearchHit = SqliteSearchHit;

export interface SearchQuery {
  query: string;
  limit: number;
  offset: number;
  /** Only messages with ids up to this one: the first page's newest, so a later page ranks the same matches. */
  upTo?: number;
  /** Only sessions of this agent (`agent:<agentId>:…`). */
  agentId?: string;
}

const SNIPPET_WORDS = 16;
/** Ranking looks at the newest this-many matching messages (a chat search wants recent hits; older ones page in by cursor within it). */
export const RANK_WINDOW = 5_000;

/** A prefix expands into at most this many exact words (most common first; the typed word itself always among them). */
export const MAX_PREFIX_TERMS = 64;
/** …chosen among at most this many words of that prefix (a one-letter prefix in a store of numbers and ids). */
const SCAN_PREFIX_TERMS = 20_000;

/**
 * Best match first (bm25 / ts_rank, among the newest RANK_WINDOW matches), newest first among equals; an empty query
 * finds nothing. SQLite runs in the store's search worker (server/store/search-worker.ts; server/store/search-sqlite.ts
 * has the query); PostgreSQL's query is server/store/search-pg.ts.
 */
export async function searchMessages(db: Kysely<Database>, dialect: DialectName, q: SearchQuery, sqliteSearch?: SqliteSearcher): Promise<SearchHit[]> {
  const terms = queryTerms(q.query);
  if (!terms.length) return [];
  const prefix = q.agentId ? `agent:${q.agentId}:%` : undefined;
  if (dialect === 'sqlite') {
    if (!sqliteSearch) throw new Error('SQLite search needs the store\'s search worker');
    return sqliteSearch.search({
      terms,
      limit: q.limit,
      offset: q.offset,
      ...(q.upTo ? { upTo: q.upTo } : {}),
      ...(q.agentId ? { agentPrefix: `agent:${q.agentId}:` } : {}),
      window: RANK_WINDOW,
      maxExpansion: MAX_PREFIX_TERMS,
      scanTerms: SCAN_PREFIX_TERMS,
      snippetWords: SNIPPET_WORDS,
    });
  }
  // As on SQLite, rank within the newest RANK_WINDOW matches, found by id-range steps (server/store/search-pg.ts).
  return searchPostgres(db, { terms, limit: q.limit, offset: q.offset, ...(q.upTo ? { upTo: q.upTo } : {}), ...(prefix ? { agentPrefix: prefix } : {}), window: RANK_WINDOW, snippetWords: SNIPPET_WORDS });
}
