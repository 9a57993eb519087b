// The triggers a turn fires on PostgreSQL. 0027_backend_shards: the run counts and usage totals they keep (0019_scale)
// are spread over rows by the backend that writes them, so concurrent turns never wait on each other's row there.
import { sql } from 'kysely';
import type { MigrationSet } from './migration-kit';

/**
 * Why: a run's end upserts one row of `run_counts` and one of `usage_totals`, and holds its lock until the commit. The
 * row was picked from 16 by the run id's hash (the usage row's id): with 10 transactions of a pool at once, two of them
 * nearly always hit one row, and the second waited for the first's commit and its WAL flush. pg_stat_user_functions
 * (track_functions = pl, bench/turn-cpu.ts --pg, 50 sessions at once): 1.28 ms a turn inside `crosstalk_run_counts`,
 * against 0.15 ms a sequential turn. A backend runs one transaction at a time, so a row per backend (its pid modulo
 * BACKEND_SHARDS: a pool's pids are near one another) is never locked by another writer. Readers sum every row.
 * The run-count trigger also fires only when a run enters or leaves an ended status (WHEN, evaluated without a call):
 * a run's insert as queued or running calls nothing.
 */
export const BACKEND_SHARDS = 1024;

const ENDED = `('ok', 'error', 'interrupted')`;

export const turnTriggerMigrations: MigrationSet = (dialect) => ({
  '0027_backend_shards': {
    async up(db) {
      if (dialect !== 'postgres') return;
      const shard = `pg_backend_pid() % ${BACKEND_SHARDS}`;
      await sql.raw(`create or replace function crosstalk_usage_totals() returns trigger language plpgsql as $$
          declare d_in bigint := 0; d_out bigint := 0; d_cost double precision := 0;
          begin
            if tg_op in ('INSERT', 'UPDATE') then d_in := new.input_tokens; d_out := new.output_tokens; d_cost := new.cost_usd; end if;
            if tg_op in ('DELETE', 'UPDATE') then d_in := d_in - old.input_tokens; d_out := d_out - old.output_tokens; d_cost := d_cost - old.cost_usd; end if;
            insert into usage_totals (shard, input_tokens, output_tokens, cost_usd) values (${shard}, d_in, d_out, d_cost)
              on conflict (shard) do update set input_tokens = usage_totals.input_tokens + excluded.input_tokens,
                output_tokens = usage_totals.output_tokens + excluded.output_tokens, cost_usd = usage_totals.cost_usd + excluded.cost_usd;
            return null;
          end $$`).execute(db);
      await sql.raw(`create or replace function crosstalk_run_counts() returns trigger language plpgsql as $$
          begin
            if tg_op in ('UPDATE', 'DELETE') and old.status in ${ENDED} and (tg_op = 'DELETE' or new.status is distinct from old.status) then
              insert into run_counts (status, shard, n) values (old.status, ${shard}, -1)
                on conflict (status, shard) do update set n = run_counts.n - 1;
            end if;
            if tg_op in ('INSERT', 'UPDATE') and new.status in ${ENDED} and (tg_op = 'INSERT' or new.status is distinct from old.status) then
              insert into run_counts (status, shard, n) values (new.status, ${shard}, 1)
                on conflict (status, shard) do update set n = run_counts.n + 1;
            end if;
            return null;
          end $$`).execute(db);
      await sql`drop trigger if exists runs_counts on runs`.execute(db);
      await sql.raw(`create trigger runs_counts_insert after insert on runs for each row
          when (new.status in ${ENDED}) execute function crosstalk_run_counts()`).execute(db);
      await sql.raw(`create trigger runs_counts_update after update of status on runs for each row
          when (new.status is distinct from old.status and (old.status in ${ENDED} or new.status in ${ENDED})) execute function crosstalk_run_counts()`).execute(db);
      await sql.raw(`create trigger runs_counts_delete after delete on runs for each row
          when (old.status in ${ENDED}) execute function crosstalk_run_counts()`).execute(db);
    },
  },
});
