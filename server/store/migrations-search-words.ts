// 0030_pg_search_words: PostgreSQL's search index holds the words inside paths, URLs, host names, e-mail addresses and
// tags, as SQLite's does: `sessions.search` for a word of `/etc/hosts` or `https://example.com/docs` found nothing there.
import { sql } from 'kysely';
import type { MigrationSet } from './migration-kit';

/**
 * The characters PostgreSQL's default parser keeps inside one token (a file path, a URL, a host, an e-mail address, a
 * version, an XML tag it drops), each read as a space: the 'simple' configuration then indexes the words between them.
 * A query's words are runs of letters and digits (search.ts queryTerms), so a whole `/etc/hosts` token was never
 * matched by any query; SQLite's unicode61 tokenizer splits the same text into `etc` and `hosts`.
 */
export const TOKEN_JOINERS = '/.:@<>&;=?#%+~\\';
const SPACES = ' '.repeat(TOKEN_JOINERS.length);

/** The stored tsvector of a message_search body (the generated column `tsv`). */
export const pgSearchVector = (body: string) => `to_tsvector('simple', translate(${body}, '${TOKEN_JOINERS.replace(/'/g, "''")}', '${SPACES}'))`;

export const searchWordsMigrations: MigrationSet = (dialect) => ({
  '0030_pg_search_words': {
    async up(db) {
      if (dialect !== 'postgres') return;
      // One rewrite of message_search (its tsv computed anew), then the GIN index built again.
      await sql`drop index if exists message_search_tsv`.execute(db);
      await sql`alter table message_search drop column tsv`.execute(db);
      await sql.raw(`alter table message_search add column tsv tsvector generated always as (${pgSearchVector('body')}) stored`).execute(db);
      await sql`create index message_search_tsv on message_search using gin (tsv)`.execute(db);
    },
  },
});
