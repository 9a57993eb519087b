// The decision log (CONTRACT §3 `approvals.history`): who decided each approval, and the indexes that page it newest first.
import { sql } from 'kysely';
import type { MigrationSet } from './migration-kit';

export const approvalHistoryMigrations: MigrationSet = () => ({
  '0017_approval_history': {
    async up(db) {
      // JSON DecidedBy ({type, id?, …}); `decided_by_type` alone so the reviewer's streak of denials is one indexed query.
      await db.schema.alterTable('approvals').addColumn('decided_by', 'text').execute();
      await db.schema.alterTable('approvals').addColumn('decided_by_type', 'text').execute();
      await db.schema.createIndex('approvals_decided').on('approvals').columns(['resolved_at', 'id']).execute();
      await db.schema.createIndex('approvals_session_decided').on('approvals').columns(['session_key', 'resolved_at', 'id']).execute();
      // Rows allowed or denied before the log existed were decided by a person or a chat approver: say `user`, the honest
      // floor. (A cancelled one may have been closed by its run's end, decided by no one: it stays out of the record.)
      await sql`update approvals set decided_by = '{"type":"user"}', decided_by_type = 'user' where status in ('allowed', 'denied') and decision is not null`.execute(db);
    },
  },
});
