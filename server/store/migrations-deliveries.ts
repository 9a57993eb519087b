// Migration 0015_deliveries: the `deliveries` table (CONTRACT §9), and a delivery for every callback and webhook row stored before it.
import { type Kysely, sql } from 'kysely';
import type { MigrationSet } from './migration-kit';

export const deliveriesMigrations: MigrationSet = () => ({
  '0015_deliveries': {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('deliveries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('from_session', 'text')
        .addColumn('from_run', 'text')
        .addColumn('from_call', 'text')
        .addColumn('to_session', 'text')
        .addColumn('to_channel', 'text')
        .addColumn('to_target', 'text')
        .addColumn('to_url', 'text')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('run_id', 'text')
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('error_code', 'text')
        .addColumn('error_message', 'text')
        .addColumn('source', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      // deliveries.list: newest first by either end, by state, by kind, or all (keyset on created_at, id).
      await db.schema.createIndex('deliveries_created').on('deliveries').columns(['created_at', 'id']).execute();
      await db.schema.createIndex('deliveries_from').on('deliveries').columns(['from_session', 'created_at', 'id']).execute();
      await db.schema.createIndex('deliveries_to').on('deliveries').columns(['to_session', 'created_at', 'id']).execute();
      await db.schema.createIndex('deliveries_state').on('deliveries').columns(['state', 'created_at', 'id']).execute();
      await db.schema.createIndex('deliveries_kind').on('deliveries').columns(['kind', 'created_at', 'id']).execute();
      // The tool card finds a call's deliveries by the call; a run's start and end find theirs by the target run.
      await db.schema.createIndex('deliveries_call').on('deliveries').columns(['from_run', 'from_call']).execute();
      await db.schema.createIndex('deliveries_run').on('deliveries').columns(['run_id']).execute();

      // Callbacks stored before: pending ones are on their way (accepted), the rest reached the caller or were dropped.
      await sql`insert into deliveries (id, kind, from_session, from_run, to_session, state, run_id, attempts, error_code, error_message, source, created_at, updated_at)
        select 'dlv_' || c.id, 'callback', c.target_session_key, c.target_run_id, c.caller_session_key,
          case c.status when 'pending' then 'accepted' when 'delivered' then 'delivered' else 'failed' end,
          'run_' || c.id, 0,
          case when c.status = 'dropped' then coalesce(c.error, 'dropped') end,
          case when c.status = 'dropped' then coalesce(c.error, 'the caller session is gone') end,
          'callbacks:' || c.id, c.created_at, coalesce(c.delivered_at, c.created_at)
        from callbacks c`.execute(db);
      // Webhook and A2A push outbox rows: their attempts, and delivered or dead as the outbox says.
      await sql`insert into deliveries (id, kind, from_session, from_run, to_url, state, run_id, attempts, error_code, error_message, source, created_at, updated_at)
        select 'dlv_' || w.id, case when w.headers is null then 'webhook' else 'push' end,
          (select r.session_key from runs r where r.id = w.run_id), w.run_id, w.url,
          case w.status when 'delivered' then 'delivered' when 'dead' then 'dead' else 'accepted' end,
          w.run_id, w.attempts,
          case when w.last_error is not null then 'channel_error' end, w.last_error,
          'webhook_outbox:' || w.id, w.created_at, coalesce(w.delivered_at, w.created_at)
        from webhook_outbox w`.execute(db);
    },
  },
});
