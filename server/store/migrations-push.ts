// Web Push (CONTRACT §7 "Notifications"): the server's VAPID key pair, the browsers' subscriptions, one-time action tokens.
import type { Kysely } from 'kysely';
import type { MigrationSet } from './migration-kit';

export const pushMigrations: MigrationSet = () => ({
  '0018_push': {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      // One row (`id = 'vapid'`), made on first start; every process of a cluster reads the same pair.
      await db.schema
        .createTable('push_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('public_key', 'text', (c) => c.notNull())
        .addColumn('private_key', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      // One row per browser: the push service's endpoint URL is the browser's identity.
      await db.schema
        .createTable('push_subscriptions')
        .addColumn('endpoint', 'text', (c) => c.primaryKey())
        .addColumn('p256dh', 'text', (c) => c.notNull())
        .addColumn('auth', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      // A pending item's push, claimed once across the cluster (the process that inserts the row sends it).
      await db.schema
        .createTable('push_actions')
        .addColumn('approval_id', 'text', (c) => c.primaryKey())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      // The action tokens pushed with a `tool` item (their SHA-256 only); a retried push carries a fresh one.
      await db.schema
        .createTable('push_tokens')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('approval_id', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('push_tokens_approval').on('push_tokens').column('approval_id').execute();
    },
  },
});
