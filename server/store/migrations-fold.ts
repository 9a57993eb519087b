// 0020_fold: where an ended run's folded text deltas end (server/store/event-fold.ts): one stored row holds a run of
// consecutive deltas at the first one's place, and `fold_id` (PostgreSQL: `fold_tx`, `fold_id`) is the last one's.
import { sql } from 'kysely';
import type { MigrationSet } from './migration-kit';

export const foldMigrations: MigrationSet = (dialect) => ({
  '0020_fold': {
    async up(db) {
      await db.schema.alterTable('events').addColumn('fold_id', 'bigint').execute();
      if (dialect === 'postgres') {
        await sql`alter table events add column fold_tx xid8`.execute(db);
        // A reader after a cursor also needs the folded rows that began before it and end after it (few: one per run).
        await sql`create index events_fold_end on events (fold_tx, fold_id) where fold_id is not null`.execute(db);
      } else {
        await sql`create index events_fold_end on events (fold_id) where fold_id is not null`.execute(db);
      }
    },
  },
});
