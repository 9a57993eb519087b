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
      // The action token pushed with a pending item (its SHA-256 only); the row's insert also claims the item's push.
      await db.schema
        .createTable('push_actions')
        .addColumn('approval_id', 'text', (c) => c.primaryKey())
        .addColumn('token_hash', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
});
