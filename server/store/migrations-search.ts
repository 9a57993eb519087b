// 0021_search_terms: SQLite's list of indexed words with their message counts, kept by triggers, so sessions.search
// expands the typed prefix into a bounded set of exact words instead of an FTS5 prefix query (server/store/search-sqlite.ts).
import { sql } from 'kysely';
import type { MigrationSet } from './migration-kit';
import { sqliteBody } from './search-sqlite';

/** Messages whose words wait to be counted into `search_terms`; at this many they are counted together. */
export const SEARCH_TERMS_BATCH = 64;

/*
 * FTS5 tokenizes, SQL cannot: a batch of new or changed messages' bodies is put through a contentless FTS5 table with
 * the same tokenizer (`messages_terms_scratch`), its words read back from that table's fts5vocab and counted into
 * `search_terms`, and the scratch table emptied ('delete-all'). Per message that costs a flush of the scratch index
 * (~0.5 ms), so messages wait in `search_terms_pending` (a row insert) and are counted SEARCH_TERMS_BATCH at a time;
 * the search reads the waiting ones' words itself (search-sqlite.ts). `n` counts messages ever indexed with the word
 * (a delete does not lower it): it only orders a prefix's completions, most common first. The triggers on messages
 * are named `messages_fts_…` as the index's own are, so a bulk load that sets those aside sets these aside too
 * (bench/lib/scale-seed.ts), and then fills the list from the index with `fillSearchTerms`.
 */
const harvest = `INSERT INTO messages_terms_scratch(rowid, body) SELECT m.id, ${sqliteBody('m')} FROM messages m WHERE m.id IN (SELECT id FROM search_terms_pending);
  INSERT INTO search_terms(term, n) SELECT term, doc FROM messages_terms_scratch_vocab WHERE true ON CONFLICT(term) DO UPDATE SET n = n + excluded.n;
  INSERT INTO messages_terms_scratch(messages_terms_scratch) VALUES ('delete-all');
  DELETE FROM search_terms_pending;`;

/** `search_terms` from the index itself (every word and its message count): one pass over the whole index. */
export const fillSearchTerms = `CREATE VIRTUAL TABLE temp.messages_fts_all_terms USING fts5vocab(main, messages_fts, row);
  INSERT INTO search_terms(term, n) SELECT term, doc FROM temp.messages_fts_all_terms WHERE true ON CONFLICT(term) DO UPDATE SET n = excluded.n;
  DROP TABLE temp.messages_fts_all_terms;
  DELETE FROM search_terms_pending;`;

export const searchMigrations: MigrationSet = (dialect) => ({
  '0021_search_terms': {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db) {
      if (dialect !== 'sqlite') return;
      await sql`CREATE TABLE search_terms (term text PRIMARY KEY, n integer NOT NULL) WITHOUT ROWID`.execute(db);
      await sql`CREATE VIRTUAL TABLE messages_terms_scratch USING fts5(body, content = '', tokenize = 'unicode61')`.execute(db);
      await sql`CREATE VIRTUAL TABLE messages_terms_scratch_vocab USING fts5vocab(messages_terms_scratch, row)`.execute(db);
      await sql`CREATE TABLE search_terms_pending (id integer PRIMARY KEY)`.execute(db);
      await sql`CREATE TRIGGER messages_fts_terms_insert AFTER INSERT ON messages BEGIN INSERT OR IGNORE INTO search_terms_pending(id) VALUES (new.id); END`.execute(db);
      await sql`CREATE TRIGGER messages_fts_terms_update AFTER UPDATE OF content, tool_args, tool_result ON messages BEGIN INSERT OR IGNORE INTO search_terms_pending(id) VALUES (new.id); END`.execute(db);
      await sql.raw(`CREATE TRIGGER search_terms_harvest AFTER INSERT ON search_terms_pending
        WHEN (SELECT count(*) FROM search_terms_pending) >= ${SEARCH_TERMS_BATCH} BEGIN ${harvest} END`).execute(db);
      for (const stmt of fillSearchTerms.split(';').map((s) => s.trim()).filter(Boolean)) await sql.raw(stmt).execute(db);
    },
  },
});
