// 0032_delivery_rounds: where a delivery's current round of attempts began (the attempts counted before it), so that a
// deliveries.retry round has maxAttempts of its own whatever the stored count (before, the round's attempt number was
// the count modulo maxAttempts: after maxAttempts changed, a retried webhook got a short round).
import type { Kysely } from 'kysely';
import type { MigrationSet } from './migration-kit';
import type { Database } from './schema';

export const deliveryRoundMigrations: MigrationSet = () => ({
  '0032_delivery_rounds': {
    async up(db) {
      await db.schema.alterTable('deliveries').addColumn('round_from', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('webhook_outbox').addColumn('round_from', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    },
  },
});

/** The columns 0032 adds: the attempts counted before the current round of a delivery (and of a webhook outbox row). */
export type RoundColumns = {
  deliveries: { round_from: number };
  webhook_outbox: { round_from: number };
};

/** `db` with 0032's columns in its types (an UPDATE or SELECT of them; rows inserted without them get 0). */
export const withRounds = (db: Kysely<Database>): Kysely<Database & RoundColumns> => db.withTables<RoundColumns>();
