// 0019_scale: reads the status panel makes every second stay bounded at 100,000 sessions (issue 24): usage totals kept
// by triggers (no SUM over every model_usage row), a covering index for the reusable-delegate count, and on PostgreSQL
// a stored tsvector for search.
import { sql } from 'kysely';
import type { MigrationSet } from './migration-kit';

/** 0019's spread of the totals and run counts over rows (picked by the usage row's id, the run id's hash); 0027_backend_shards picks the row by the writing backend instead (migrations-turn-triggers.ts). */
export const USAGE_TOTAL_SHARDS = 16;

export const scaleMigrations: MigrationSet = (dialect) => ({
  '0019_scale': {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db) {
      await sql`create table usage_totals (shard integer primary key, input_tokens bigint not null default 0, output_tokens bigint not null default 0, cost_usd double precision not null default 0)`.execute(db);
      await sql`insert into usage_totals (shard, input_tokens, output_tokens, cost_usd)
        select 0, coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0), coalesce(sum(cost_usd), 0) from model_usage`.execute(db);
      if (dialect === 'sqlite') {
        // One writer at a time on SQLite: one row.
        await sql`create trigger model_usage_totals_insert after insert on model_usage begin
          update usage_totals set input_tokens = input_tokens + new.input_tokens, output_tokens = output_tokens + new.output_tokens, cost_usd = cost_usd + new.cost_usd where shard = 0; end`.execute(db);
        await sql`create trigger model_usage_totals_delete after delete on model_usage begin
          update usage_totals set input_tokens = input_tokens - old.input_tokens, output_tokens = output_tokens - old.output_tokens, cost_usd = cost_usd - old.cost_usd where shard = 0; end`.execute(db);
        await sql`create trigger model_usage_totals_update after update of input_tokens, output_tokens, cost_usd on model_usage begin
          update usage_totals set input_tokens = input_tokens + new.input_tokens - old.input_tokens, output_tokens = output_tokens + new.output_tokens - old.output_tokens, cost_usd = cost_usd + new.cost_usd - old.cost_usd where shard = 0; end`.execute(db);
      } else {
        await sql.raw(`create or replace function crosstalk_usage_totals() returns trigger language plpgsql as $$
          declare d_in bigint := 0; d_out bigint := 0; d_cost double precision := 0; k integer;
          begin
            if tg_op in ('INSERT', 'UPDATE') then d_in := new.input_tokens; d_out := new.output_tokens; d_cost := new.cost_usd; k := new.id % ${USAGE_TOTAL_SHARDS}; end if;
            if tg_op in ('DELETE', 'UPDATE') then d_in := d_in - old.input_tokens; d_out := d_out - old.output_tokens; d_cost := d_cost - old.cost_usd; k := old.id % ${USAGE_TOTAL_SHARDS}; end if;
            insert into usage_totals (shard, input_tokens, output_tokens, cost_usd) values (k, d_in, d_out, d_cost)
              on conflict (shard) do update set input_tokens = usage_totals.input_tokens + excluded.input_tokens,
                output_tokens = usage_totals.output_tokens + excluded.output_tokens, cost_usd = usage_totals.cost_usd + excluded.cost_usd;
            return null;
          end $$`).execute(db);
        await sql`create trigger model_usage_totals after insert or delete or update of input_tokens, output_tokens, cost_usd on model_usage
          for each row execute function crosstalk_usage_totals()`.execute(db);
      }
      if (dialect === 'postgres') {
        // sessions.search: the words of each indexed row stored beside it (server/store/search.ts), so ranking the newest
        // matches reads them instead of parsing every body again; the GIN index moves to the stored column.
        await sql`alter table message_search add column tsv tsvector generated always as (to_tsvector('simple', body)) stored`.execute(db);
        await sql`create index message_search_tsv on message_search using gin (tsv)`.execute(db);
        await sql`drop index if exists message_search_fts`.execute(db);
      }
      if (dialect === 'postgres') {
        // status on PostgreSQL (the cluster's run figures): ended runs counted by status, kept by a trigger on the
        // transitions into and out of an ended status (one upsert per ended run), instead of a GROUP BY over every run.
        await sql`create table run_counts (status text not null, shard integer not null, n bigint not null default 0, primary key (status, shard))`.execute(db);
        await sql`insert into run_counts (status, shard, n) select status, 0, count(*) from runs where status in ('ok', 'error', 'interrupted') group by status`.execute(db);
        await sql.raw(`create or replace function crosstalk_run_counts() returns trigger language plpgsql as $$
          begin
            if tg_op in ('UPDATE', 'DELETE') and old.status in ('ok', 'error', 'interrupted') and (tg_op = 'DELETE' or new.status is distinct from old.status) then
              insert into run_counts (status, shard, n) values (old.status, abs(hashtext(old.id)) % ${USAGE_TOTAL_SHARDS}, -1)
                on conflict (status, shard) do update set n = run_counts.n - 1;
            end if;
            if tg_op in ('INSERT', 'UPDATE') and new.status in ('ok', 'error', 'interrupted') and (tg_op = 'INSERT' or new.status is distinct from old.status) then
              insert into run_counts (status, shard, n) values (new.status, abs(hashtext(new.id)) % ${USAGE_TOTAL_SHARDS}, 1)
                on conflict (status, shard) do update set n = run_counts.n + 1;
            end if;
            return null;
          end $$`).execute(db);
        await sql`create trigger runs_counts after insert or delete or update of status on runs for each row execute function crosstalk_run_counts()`.execute(db);
      }
      // status's reusable-delegate count and bytes: read from the index alone, over the subagent sessions only.
      await sql`create index sessions_kind_live on sessions (kind, dismissed_at, bytes)`.execute(db);
    },
  },
});
