// 0022_pgsearch: a BRIN index on message_search's ids (PostgreSQL), so sessions.search reads one id range's matches only.
import { sql } from 'kysely';
import type { MigrationSet } from './migration-kit';

/*
 * message_search rows are appended in id order, so a block range's ids are a narrow interval: a BRIN summary (a
 * min/max per 32 heap pages, ~160 kB for 3,000,000 rows) turns `message_id > lo` into a page bitmap for next to
 * nothing, and PostgreSQL ANDs it with the GIN bitmap of the query's words — only the matches inside the range are
 * read from the heap (server/store/search-pg.ts). A btree range bitmap over the primary key costs a leaf entry per id
 * instead (150 ms for 1,000,000 ids). Pages filled since the last summary are in every range's bitmap (only their
 * matches are read, still), so `autosummarize` has autovacuum summarize each range as it fills (within a naptime) rather
 * than at the table's next vacuum (every ~20 % of its size in inserts). Cost on an existing store: one sequential read of message_search while holding
 * a SHARE lock (writes to messages wait): 4.1 s for 3,000,000 rows (1.1 GB), ~15 s expected at 10,000,000.
 */
export const pgsearchMigrations: MigrationSet = (dialect) => ({
  '0022_pgsearch': {
    async up(db) {
      if (dialect !== 'postgres') return;
      await sql`create index message_search_id_brin on message_search using brin (message_id) with (pages_per_range = 32, autosummarize = on)`.execute(db);
    },
  },
});
