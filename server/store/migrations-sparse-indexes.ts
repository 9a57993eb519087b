// 0024_sparse_indexes: fewer index pages written at every turn (bench/wal-pages.ts: the WAL frames per turn, by b-tree).
// Indexes on columns that are null for nearly every row hold only the rows that have a value: a top-level session has
// no parent, an unleased (SQLite) session no owner, a run that merged into none no `merged_into`. Every query on these
// columns compares them with a value (`=`, `in`), which implies `is not null`, so both planners still use them.
// `sessions_kind_live` (status's reusable delegates: their count and bytes from the index alone) holds the live
// subagent sessions only, so a top-level session's `bytes` changing at every turn no longer rewrites it; its query
// names the kind as a literal, as the index does. `runs_session` (session_key, created_at) goes: every query on a
// session's runs is served by `runs_session_status` (session_key, status, created_at).
// 0026_compaction_index: `messages_session_kind` (session_key, kind, id) served one query, a session's newest
// compaction row, and took an entry for every message; `messages_compaction` holds the compaction rows only.
import { sql } from 'kysely';
import type { MigrationSet } from './migration-kit';

/** The partial indexes: name, table, columns, which rows. */
export const SPARSE_INDEXES = [
  ['sessions_parent', 'sessions', 'parent_key, last_activity_at', 'parent_key is not null'],
  ['sessions_delegates', 'sessions', 'parent_key, last_interacted_at, key', 'parent_key is not null'],
  ['sessions_owner', 'sessions', 'owner', 'owner is not null'],
  ['runs_merged_into', 'runs', 'merged_into', 'merged_into is not null'],
  ['sessions_kind_live', 'sessions', 'kind, dismissed_at, bytes', "kind = 'subagent' and dismissed_at is null"],
] as const;

/** A session's compaction rows (compaction.ts finds the newest; its query names the kind as a literal, as this does). */
export const COMPACTION_INDEX = ['messages_compaction', 'session_key, id', "kind = 'compaction'"] as const;

export const sparseIndexMigrations: MigrationSet = () => ({
  '0024_sparse_indexes': {
    async up(db) {
      for (const [name, table, cols, rows] of SPARSE_INDEXES) {
        await sql`drop index if exists ${sql.raw(name)}`.execute(db);
        await sql`create index ${sql.raw(name)} on ${sql.raw(table)} (${sql.raw(cols)}) where ${sql.raw(rows)}`.execute(db);
      }
      await sql`drop index if exists runs_session`.execute(db);
    },
  },
  '0026_compaction_index': {
    async up(db) {
      await sql`create index if not exists ${sql.raw(COMPACTION_INDEX[0])} on messages (${sql.raw(COMPACTION_INDEX[1])}) where ${sql.raw(COMPACTION_INDEX[2])}`.execute(db);
      await sql`drop index if exists messages_session_kind`.execute(db);
    },
  },
});
