// 0023_search_batches: SQLite's full-text index follows the messages in batches (server/store/search-indexer.ts)
// instead of by insert triggers in every writing transaction; `search_indexed.upto` is the newest message indexed.
// 0028_search_merges: and merges the index's segments in bounded steps, not FTS5 inside whichever write flushed one.
import { sql } from 'kysely';
import type { MigrationSet } from './migration-kit';

export const searchBatchMigrations: MigrationSet = (dialect) => ({
  '0023_search_batches': {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db) {
      if (dialect !== 'sqlite') return;
      // Every message so far was indexed by the triggers dropped here; the indexer goes on after the newest.
      await sql`CREATE TABLE search_indexed (upto integer NOT NULL)`.execute(db);
      await sql`INSERT INTO search_indexed (upto) SELECT coalesce(max(id), 0) FROM messages`.execute(db);
      await sql`DROP TRIGGER IF EXISTS messages_fts_insert`.execute(db);
      await sql`DROP TRIGGER IF EXISTS messages_fts_terms_insert`.execute(db);
      // The update and delete triggers stay: a change to an indexed message is indexed in its own transaction (a
      // message not indexed yet is indexed then too; the indexer's INSERT OR REPLACE writes it again, the same).
    },
  },
  '0028_search_merges': {
    // FTS5 merges no segments inside the writes that flush them (its 'automerge', stored in messages_fts_config);
    // the indexer merges in bounded steps instead (search-indexer.ts MERGE_PAGES).
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db) {
      if (dialect !== 'sqlite') return;
      await sql`INSERT INTO messages_fts(messages_fts, rank) VALUES ('automerge', 0)`.execute(db);
    },
  },
});
