// 0025_live_runs (PostgreSQL): a session's live runs found in an index that holds only live runs, so a turn's checks for
// them cost the same at its session's 10th run and its 10,000th.
import { sql } from 'kysely';
import type { MigrationSet } from './migration-kit';

/**
 * Why: the turn's start (run-writes.ts `enqueuePg`) asks three times whether its session has a run that is queued,
 * running or waiting for approval, the run's end whether one is queued, and the liveness sweep (cluster.ts) the same of
 * every unowned session. PostgreSQL served them from `runs_session_status` (session_key, status, created_at) with the
 * status list as a filter (the generic plan of a named statement), reading every run the session ever had: at 8,000
 * runs in one session, 37% of the backends' CPU of a turn under `ExecSetParamPlan` (perf, bench/turn-cpu.ts --pg).
 * Every such query names the statuses as literals, which imply this index's predicate, so both generic and custom
 * plans take it. A run leaves it when it ends (its status is indexed, so that update is never HOT). SQLite looks the
 * statuses up in `runs_session_status` with its IN operator, and needs nothing.
 */
export const liveRunsMigrations: MigrationSet = (dialect) => ({
  '0025_live_runs': {
    async up(db) {
      if (dialect !== 'postgres') return;
      await sql`create index if not exists runs_session_live on runs (session_key, created_at) where status in ('queued', 'running', 'waiting_approval')`.execute(db);
    },
  },
});
