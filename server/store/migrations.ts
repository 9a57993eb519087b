// Schema migrations: one list for both dialects; only the auto-increment id column differs.
import { type Kysely, sql } from 'kysely';
import { type Migration, type MigrationProvider, Migrator } from 'kysely/migration';
import type { DialectName } from './schema';
import type { MigrationSet, SerialId } from './migration-kit';
import { scaleMigrations } from './migrations-scale';
import { searchMigrations } from './migrations-search';
import { roomSearchMigration } from './search';
import { approvalHistoryMigrations } from './migrations-approval-history';
import { deliveriesMigrations } from './migrations-deliveries';
import { oauthMigrations } from './migrations-oauth';
import { pushMigrations } from './migrations-push';
import { foldMigrations } from './migrations-fold';
import { pgsearchMigrations } from './migrations-pgsearch';
import { searchBatchMigrations } from './migrations-search-batches';
import { sparseIndexMigrations } from './migrations-sparse-indexes';
import { liveRunsMigrations } from './migrations-live-runs';
import { turnTriggerMigrations } from './migrations-turn-triggers';
import { reviewerMigrations } from './migrations-reviewer';
import { searchWordsMigrations } from './migrations-search-words';
import { deliveryWaitMigrations } from './migrations-delivery-wait';
import { deliveryRoundMigrations } from './migrations-delivery-rounds';

// Later capabilities keep their migrations in modules of their own (server/store/migrations-<name>.ts): add the set here.
const sets: MigrationSet[] = [oauthMigrations, approvalHistoryMigrations, deliveriesMigrations, pushMigrations, scaleMigrations, searchMigrations, foldMigrations, pgsearchMigrations, searchBatchMigrations, sparseIndexMigrations, liveRunsMigrations, turnTriggerMigrations, reviewerMigrations, searchWordsMigrations, deliveryWaitMigrations, deliveryRoundMigrations];

function migrations(dialect: DialectName): Record<string, Migration> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const serialId: SerialId = (db: Kysely<any>, table: string) =>
    dialect === 'postgres'
      ? db.schema.createTable(table).addColumn('id', 'bigserial', (c) => c.primaryKey())
      : db.schema.createTable(table).addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());

  return Object.assign(base(dialect, serialId), ...sets.map((set) => set(dialect, serialId)));
}

function base(dialect: DialectName, serialId: SerialId): Record<string, Migration> {
  return {
    '0001_foundation': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('sessions')
          .addColumn('key', 'text', (c) => c.primaryKey())
          .addColumn('agent_id', 'text', (c) => c.notNull())
          .addColumn('kind', 'text', (c) => c.notNull())
          .addColumn('label', 'text')
          .addColumn('model', 'text')
          .addColumn('thinking_level', 'text')
          .addColumn('spawn_depth', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('queue_mode', 'text')
          .addColumn('parent_key', 'text')
          .addColumn('meta', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('last_activity_at', 'text', (c) => c.notNull())
          .addColumn('message_count', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('bytes', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('status', 'text', (c) => c.notNull().defaultTo('idle'))
          .execute();
        await db.schema.createIndex('sessions_activity').on('sessions').columns(['last_activity_at', 'key']).execute();
        await db.schema
          .createIndex('sessions_agent_activity')
          .on('sessions')
          .columns(['agent_id', 'last_activity_at', 'key'])
          .execute();
        await db.schema.createIndex('sessions_parent').on('sessions').columns(['parent_key', 'last_activity_at']).execute();

        await serialId(db, 'messages')
          .addColumn('session_key', 'text', (c) => c.notNull())
          .addColumn('role', 'text', (c) => c.notNull())
          .addColumn('kind', 'text', (c) => c.notNull())
          .addColumn('content', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('run_id', 'text')
          .addColumn('author_type', 'text', (c) => c.notNull())
          .addColumn('author_id', 'text', (c) => c.notNull())
          .addColumn('author_name', 'text')
          .addColumn('tool_name', 'text')
          .addColumn('tool_call_id', 'text')
          .addColumn('tool_args', 'text')
          .addColumn('tool_result', 'text')
          .addColumn('meta', 'text')
          .execute();
        await db.schema.createIndex('messages_session_id').on('messages').columns(['session_key', 'id']).execute();
        await db.schema.createIndex('messages_run').on('messages').columns(['run_id']).execute();

        await db.schema
          .createTable('runs')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('session_key', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('input', 'text', (c) => c.notNull())
          .addColumn('queue_mode', 'text', (c) => c.notNull())
          .addColumn('response', 'text')
          .addColumn('error', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('started_at', 'text')
          .addColumn('ended_at', 'text')
          .addColumn('origin', 'text')
          .addColumn('webhook', 'text')
          .addColumn('last_seq', 'integer', (c) => c.notNull().defaultTo(0))
          .execute();
        await db.schema.createIndex('runs_status').on('runs').columns(['status', 'created_at']).execute();
        await db.schema.createIndex('runs_session').on('runs').columns(['session_key', 'created_at']).execute();

        await serialId(db, 'events')
          .addColumn('run_id', 'text', (c) => c.notNull())
          .addColumn('seq', 'integer', (c) => c.notNull())
          .addColumn('stream', 'text', (c) => c.notNull())
          .addColumn('ts', 'text', (c) => c.notNull())
          .addColumn('session_key', 'text', (c) => c.notNull())
          .addColumn('data', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('events_session_id').on('events').columns(['session_key', 'id']).execute();
        await db.schema.createIndex('events_run_id').on('events').columns(['run_id', 'id']).execute();

        await db.schema
          .createTable('approvals')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('session_key', 'text', (c) => c.notNull())
          .addColumn('run_id', 'text', (c) => c.notNull())
          .addColumn('call_id', 'text', (c) => c.notNull())
          .addColumn('tool', 'text', (c) => c.notNull())
          .addColumn('args', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('decision', 'text')
          .addColumn('reason', 'text')
          .addColumn('requested_at', 'text', (c) => c.notNull())
          .addColumn('resolved_at', 'text')
          .execute();
        await db.schema.createIndex('approvals_status').on('approvals').columns(['status', 'requested_at']).execute();

        await db.schema
          .createTable('session_tool_rules')
          .addColumn('session_key', 'text', (c) => c.notNull())
          .addColumn('tool', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('session_tool_rules_pk', ['session_key', 'tool'])
          .execute();

        await db.schema
          .createTable('idempotency')
          .addColumn('key', 'text', (c) => c.primaryKey())
          .addColumn('result', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
      },
    },
    '0002_messaging': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        await db.schema.alterTable('runs').addColumn('merged_into', 'text').execute();
        await db.schema.createIndex('runs_merged_into').on('runs').column('merged_into').execute();
        // Internal callbacks, recorded in the same transaction as the target run's end, delivered once.
        await db.schema
          .createTable('callbacks')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('target_run_id', 'text', (c) => c.notNull())
          .addColumn('target_session_key', 'text', (c) => c.notNull())
          .addColumn('caller_session_key', 'text', (c) => c.notNull())
          .addColumn('caller_run_id', 'text')
          .addColumn('response', 'text', (c) => c.notNull())
          .addColumn('meta', 'text')
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('error', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('delivered_at', 'text')
          .execute();
        await db.schema.createIndex('callbacks_status').on('callbacks').columns(['status', 'created_at']).execute();
        // Webhook outbox: durable, retried with backoff, dead-lettered after the last attempt.
        await db.schema
          .createTable('webhook_outbox')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('run_id', 'text', (c) => c.notNull())
          .addColumn('url', 'text', (c) => c.notNull())
          .addColumn('secret', 'text')
          .addColumn('body', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('next_attempt_at', 'text', (c) => c.notNull())
          .addColumn('last_error', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('delivered_at', 'text')
          .execute();
        await db.schema.createIndex('webhook_outbox_due').on('webhook_outbox').columns(['status', 'next_attempt_at']).execute();
      },
    },
    '0003_delegates': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        // Delegate sessions: ordered by when the parent last engaged them (not by every message), kept until dismissed.
        await db.schema.alterTable('sessions').addColumn('last_interacted_at', 'text').execute();
        await db.schema.alterTable('sessions').addColumn('turns', 'integer', (c) => c.notNull().defaultTo(0)).execute();
        await db.schema.alterTable('sessions').addColumn('dismissed_at', 'text').execute();
        await db.schema.createIndex('sessions_delegates').on('sessions').columns(['parent_key', 'last_interacted_at', 'key']).execute();
      },
    },
    '0004_cluster': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        // The session row is the lock: its owner (a process id) and a fencing epoch bumped at every claim.
        await db.schema.alterTable('sessions').addColumn('owner', 'text').execute();
        await db.schema.alterTable('sessions').addColumn('epoch', 'integer', (c) => c.notNull().defaultTo(0)).execute();
        await db.schema.createIndex('sessions_owner').on('sessions').columns(['owner']).execute();
        // agent.cancel from any process: durable, read by the owner (or by whoever re-drives the run).
        await db.schema.alterTable('runs').addColumn('cancel_requested', 'text').execute();
        await db.schema.createIndex('runs_session_status').on('runs').columns(['session_key', 'status', 'created_at']).execute();
        // A non-idempotent tool call that had started when its process died answers `interrupted`, not a second run.
        await db.schema
          .createTable('tool_starts')
          .addColumn('run_id', 'text', (c) => c.notNull())
          .addColumn('call_id', 'text', (c) => c.notNull())
          .addColumn('started_at', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('tool_starts_pk', ['run_id', 'call_id'])
          .execute();
        // Gateway processes sharing the store (PostgreSQL): liveness by advisory lock and heartbeat.
        await db.schema
          .createTable('processes')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('lock_key', 'integer', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('host', 'text', (c) => c.notNull())
          .addColumn('pid', 'integer', (c) => c.notNull())
          .addColumn('url', 'text')
          .addColumn('started_at', 'text', (c) => c.notNull())
          .addColumn('heartbeat_ms', 'bigint', (c) => c.notNull())
          .execute();
        if (dialect === 'postgres') {
          // Event cursors are (transaction id, id): ids commit out of order across processes, transaction ids
          // below the snapshot's xmin are all settled, so a reader never skips a row that commits late.
          await sql`alter table events add column tx xid8 not null default pg_current_xact_id()`.execute(db);
          await sql`create index events_tx_id on events (tx, id)`.execute(db);
          await sql`create index events_session_tx_id on events (session_key, tx, id)`.execute(db);
          await sql`create index events_run_tx_id on events (run_id, tx, id)`.execute(db);
          await sql`create sequence process_lock_keys`.execute(db);
          // One running run per session, whatever the processes do.
          await sql`create unique index runs_one_running on runs (session_key) where status = 'running'`.execute(db);
        }
      },
    },
    '0008_interop': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        // A2A push notification configs outlive the process that took them: a restarted gateway re-arms them.
        await db.schema
          .createTable('a2a_push_configs')
          .addColumn('task_id', 'text', (c) => c.notNull())
          .addColumn('id', 'text', (c) => c.notNull())
          .addColumn('url', 'text', (c) => c.notNull())
          .addColumn('token', 'text')
          .addColumn('auth_scheme', 'text')
          .addColumn('auth_credentials', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('a2a_push_configs_pk', ['task_id', 'id'])
          .execute();
        // Extra request headers of one delivery (A2A push: its token or Authorization header, its content type).
        await db.schema.alterTable('webhook_outbox').addColumn('headers', 'text').execute();
      },
    },
    '0005_trust': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        // Where a gated run's trust came from (CONTRACT §5 "Trust"), shown on the approval.
        await db.schema.alterTable('approvals').addColumn('trust', 'text').execute();
        // Channel senders: pending pairing requests, approved (allowed) and denied senders, per channel.
        await db.schema
          .createTable('channel_senders')
          .addColumn('channel', 'text', (c) => c.notNull())
          .addColumn('peer', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('code', 'text', (c) => c.notNull())
          .addColumn('first_message', 'text', (c) => c.notNull())
          .addColumn('requested_at', 'text', (c) => c.notNull())
          .addColumn('resolved_at', 'text')
          .addPrimaryKeyConstraint('channel_senders_pk', ['channel', 'peer'])
          .execute();
        await db.schema.createIndex('channel_senders_code').on('channel_senders').columns(['channel', 'code']).execute();
        // Messages of senders waiting for pairing: run in order on approve, dropped on deny.
        await serialId(db, 'channel_held')
          .addColumn('channel', 'text', (c) => c.notNull())
          .addColumn('peer', 'text', (c) => c.notNull())
          .addColumn('agent_id', 'text', (c) => c.notNull())
          .addColumn('message', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('channel_held_peer').on('channel_held').columns(['channel', 'peer', 'id']).execute();
      },
    },
    '0006_room': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        // Full-text search over transcripts (sessions.search), tool arguments and results included: see server/store/search.ts.
        await roomSearchMigration(db, dialect);
      },
    },
    '0007_usage': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        // One row per model step: tokens and cost as priced when the step ran (issue 13).
        await serialId(db, 'model_usage')
          .addColumn('run_id', 'text', (c) => c.notNull())
          .addColumn('session_key', 'text', (c) => c.notNull())
          .addColumn('agent_id', 'text', (c) => c.notNull())
          .addColumn('model', 'text', (c) => c.notNull())
          .addColumn('kind', 'text', (c) => c.notNull())
          .addColumn('input_tokens', 'integer', (c) => c.notNull())
          .addColumn('output_tokens', 'integer', (c) => c.notNull())
          .addColumn('cached_tokens', 'integer', (c) => c.notNull())
          .addColumn('cost_usd', 'double precision', (c) => c.notNull())
          .addColumn('priced', 'integer', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('model_usage_run').on('model_usage').columns(['run_id']).execute();
        await db.schema.createIndex('model_usage_session').on('model_usage').columns(['session_key']).execute();
        // Sessions a session started by messaging them (delegates are linked by sessions.parent_key already).
        await db.schema
          .createTable('session_links')
          .addColumn('parent_key', 'text', (c) => c.notNull())
          .addColumn('child_key', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('session_links_pk', ['parent_key', 'child_key'])
          .execute();
        // The newest compaction row of a session, found without scanning its transcript.
        await db.schema.createIndex('messages_session_kind').on('messages').columns(['session_key', 'kind', 'id']).execute();
        // W3C traceparent sent as a header with each webhook delivery.
        await db.schema.alterTable('webhook_outbox').addColumn('traceparent', 'text').execute();
      },
    },
    '0013_budgets': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        // A model step's request tree (CONTRACT §5 "Budgets"): its spend is summed by the tree's root run.
        await db.schema.alterTable('model_usage').addColumn('root_run_id', 'text').execute();
        await db.schema.createIndex('model_usage_root').on('model_usage').columns(['root_run_id']).execute();
        // What a pending item asks for (CONTRACT §3 approvals.list `kind`): tool, elicitation, authorization or budget.
        await db.schema.alterTable('approvals').addColumn('kind', 'text', (c) => c.notNull().defaultTo('tool')).execute();
        // One pending budget item per tree and allowance: its call id names the tree and the how-manieth cap.
        await sql`create unique index approvals_budget_call on approvals (call_id) where kind = 'budget'`.execute(db);
      },
    },
    '0014_mcp': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        // The content an `elicitation` item was accepted with (CONTRACT §5 "MCP elicitation"), for the waiting call.
        await db.schema.alterTable('approvals').addColumn('response', 'text').execute();
      },
    },
    '0009_one_running': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        if (dialect === 'postgres') return; // created with the cluster (0004)
        // One running run per session on SQLite too. One process cannot start a second, but a store written by
        // an older version might hold one: all but the oldest end `interrupted`, so the index can be built.
        await sql`update runs set status = 'interrupted', error = 'a second running run of its session', ended_at = ${new Date().toISOString()}
          where status = 'running' and exists (
            select 1 from runs o where o.session_key = runs.session_key and o.status = 'running'
              and (o.created_at < runs.created_at or (o.created_at = runs.created_at and o.id < runs.id)))`.execute(db);
        await sql`create unique index runs_one_running on runs (session_key) where status = 'running'`.execute(db);
      },
    },
    '0010_idempotency_claims': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        // An idempotency key is a claim (CONTRACT §3): `pending` while its request is being answered (by `owner`, a
        // process id), `done` with the first answer in `result`. `run_id`: the run an `agent` key accepted.
        await db.schema.alterTable('idempotency').addColumn('state', 'text', (c) => c.notNull().defaultTo('done')).execute();
        await db.schema.alterTable('idempotency').addColumn('owner', 'text').execute();
        await db.schema.alterTable('idempotency').addColumn('run_id', 'text').execute();
        // Keys expire (server/store/retention.ts): the sweep finds old ones by age.
        await db.schema.createIndex('idempotency_created').on('idempotency').columns(['created_at']).execute();
        // Pending pairing requests expire too.
        await db.schema.createIndex('channel_senders_pending').on('channel_senders').columns(['status', 'requested_at']).execute();
      },
    },
    '0011_fencing': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        // Lease epochs never repeat, not even for a session deleted and created again under the same key: a late
        // write of the old session's run must not pass the new one's fence. PostgreSQL: one sequence for every
        // epoch (a new session's default, each claim, release and takeover). SQLite: a counter row, bumped by a
        // trigger for each new session.
        const start = Number((await sql<{ m: number | null }>`select max(epoch) as m from sessions`.execute(db)).rows[0]?.m ?? 0) + 1;
        if (dialect === 'postgres') {
          await sql`create sequence session_epochs start with ${sql.lit(start)}`.execute(db);
          await sql`alter table sessions alter column epoch set default nextval('session_epochs')`.execute(db);
        } else {
          await sql`create table epoch_counter (id integer primary key check (id = 1), n integer not null)`.execute(db);
          await sql`insert into epoch_counter (id, n) values (1, ${start})`.execute(db);
          await sql`create trigger sessions_epoch after insert on sessions begin
              update epoch_counter set n = n + 1 where id = 1;
              update sessions set epoch = (select n from epoch_counter where id = 1) where rowid = new.rowid;
            end`.execute(db);
        }
        // An approval is one per tool call, whichever process (a zombie, the re-driver) asks for it first.
        await sql`delete from approvals where exists (select 1 from approvals o where o.run_id = approvals.run_id and o.call_id = approvals.call_id and o.id < approvals.id)`.execute(db);
        await db.schema.createIndex('approvals_call').unique().on('approvals').columns(['run_id', 'call_id']).execute();
      },
    },
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function migrateToLatest(db: Kysely<any>, dialect: DialectName, schema?: string): Promise<void> {
  const provider: MigrationProvider = { getMigrations: async () => migrations(dialect) };
  // With a schema of our own, the migration tables live there too (otherwise another schema's tables would be taken for ours).
  // Unordered: migrations are named by the branch that adds them, so a store may have run a later name (0011) before
  // an earlier one lands (0010); each runs once whatever the order.
  const migrator = new Migrator({ db, provider, migrationTableName: 'crosstalk_migrations', migrationLockTableName: 'crosstalk_migrations_lock', allowUnorderedMigrations: true, ...(schema ? { migrationTableSchema: schema } : {}) });
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator.migrateToLatest();
    if (!error) return;
    const failed = results?.find((r) => r.status === 'Error');
    const message = (error as Error).message ?? String(error);
    // The migrator looks the database's tables up across every schema (kysely's introspection: every column of every
    // table, with pg_get_serial_sequence by name); a schema dropped meanwhile by someone else (another tenant, a test
    // run cleaning up) fails that lookup once: its table is gone (`relation … does not exist`), or went between the
    // function's two lookups (`column "id" of relation "push_keys" does not exist`). Nothing of ours ran: look again.
    // (Or one another process is still creating: its CREATE SCHEMA and tables are not committed yet.)
    if (!failed && attempt < 20 && LOOKUP_RACE.test(message) && !(schema && message.includes(`"${schema}"`))) {
      await new Promise((r) => setTimeout(r, Math.min(50 * attempt, 500)));
      continue;
    }
    // No migration failed: the migrator's own steps did (its tables' lookup or creation, its lock, reading what ran).
    throw new Error(failed ? `migration ${failed.migrationName} failed: ${message}` : `migrating failed before any migration ran (the migration tables' lookup, lock or read): ${message}`);
  }
}

/** A catalog lookup broken by DDL elsewhere in the database (see migrateToLatest). */
export const LOOKUP_RACE = /^schema ".*" does not exist$|^relation .* does not exist$|^column ".*" of relation ".*" does not exist$|cache lookup failed/;
