// 0024_sparse_indexes: indexes on columns that are null for nearly every row hold only the rows that have a value.
// A top-level session has no parent, an unleased (SQLite) session no owner, a run that merged into none no
// `merged_into`: their rows no longer write index pages at every turn (bench/wal-pages.ts: the WAL frames per turn,
// by b-tree). Every query on these columns compares them with a value (`=`, `in`), which implies `is not null`, so
// both SQLite's and PostgreSQL's planners still use the partial index.
import { sql } from 'kysely';
import type { MigrationSet } from './migration-kit';

/** The partial indexes: name, table, columns, the column that must be set. */
export const SPARSE_INDEXES = [
  ['sessions_parent', 'sessions', 'parent_key, last_activity_at', 'parent_key'],
  ['sessions_delegates', 'sessions', 'parent_key, last_interacted_at, key', 'parent_key'],
  ['sessions_owner', 'sessions', 'owner', 'owner'],
  ['runs_merged_into', 'runs', 'merged_into', 'merged_into'],
] as const;

export const sparseIndexMigrations: MigrationSet = () => ({
  '0024_sparse_indexes': {
    async up(db) {
      for (const [name, table, cols, set] of SPARSE_INDEXES) {
        await sql`drop index if exists ${sql.raw(name)}`.execute(db);
        await sql`create index ${sql.raw(name)} on ${sql.raw(table)} (${sql.raw(cols)}) where ${sql.raw(set)} is not null`.execute(db);
      }
    },
  },
});
