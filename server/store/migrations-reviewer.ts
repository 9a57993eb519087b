// 0029_reviewer_escalations: which pending items the reviewer handed to a person, so its streak of denials (CONTRACT §5
// "Reviewer": N denials in a row) counts the calls it escalated as breaking the streak.
import type { MigrationSet } from './migration-kit';

export const reviewerMigrations: MigrationSet = () => ({
  '0029_reviewer_escalations': {
    async up(db) {
      // 'escalate': the reviewer's own verdict; 'streak': escalated unseen because of a streak; null: no reviewer.
      await db.schema.alterTable('approvals').addColumn('review', 'text').execute();
    },
  },
});
