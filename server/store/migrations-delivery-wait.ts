// 0031_delivery_not_before: the earliest time a delivery's next attempt may go, when its receiver said so (a push
// service's 429 or 503 with Retry-After, RFC 8030 §8.4); kept in the store, so a restart or another instance waits too.
import type { MigrationSet } from './migration-kit';

export const deliveryWaitMigrations: MigrationSet = () => ({
  '0031_delivery_not_before': {
    async up(db) {
      await db.schema.alterTable('deliveries').addColumn('not_before', 'text').execute();
    },
  },
});
