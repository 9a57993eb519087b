// 0032_delivery_rounds: where a delivery's current round of attempts began (the attempts counted before it), so that a
// deliveries.retry round has maxAttempts of its own whatever the stored count (before, the round's attempt number was
// the count modulo maxAttempts: after maxAttempts changed, a retried webhook got a short round).
import type { MigrationSet } from './migration-kit';

export const deliveryRoundMigrations: MigrationSet = () => ({
  '0032_delivery_rounds': {
    async up(db) {
      await db.schema.alterTable('deliveries').addColumn('round_from', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('webhook_outbox').addColumn('round_from', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    },
  },
});
