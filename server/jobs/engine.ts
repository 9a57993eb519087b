// The job engine of a process on PostgreSQL: pg-boss 12 (chosen with figures: BENCHMARKS.md, jobs section).
// It carries dispatch, retries with exponential backoff, dead letters and stalled-job recovery (a job whose worker
// died is failed by any instance's supervisor once it expires, then retried). What we write ourselves is only
// what no engine gives (server/cluster): the session lease with its fencing epoch, control messages to a
// session's owner, and event fan-out.
//
// Connections: pg-boss runs its statements on the process's one pg Pool (shared with Kysely) through an adapter,
// and LISTENs on the process's liveness connection (Cluster.listen), so the engine opens no connection of its own.
// Its tables live in a schema of their own beside ours (`<schema>_pgboss`, or `pgboss`), so test schemas on one
// database never share a queue.
import type pg from 'pg';
import { type Db, PgBoss } from 'pg-boss';
import type { Logger } from '../logger';
import { jobsSchema } from '../store/db';

export interface Listener {
  listen(channel: string, onNotification: (payload: string) => void, onReconnect: () => void): Promise<{ close(): Promise<void> }>;
}

/** The engine's timings: how fast a dead worker's job is noticed, how often idle workers look for retries. */
export const ENGINE = {
  /** How often an instance's supervisor looks for expired jobs (and other upkeep); pg-boss's floor is 1. */
  superviseSeconds: Number(process.env.CROSSTALK_JOBS_SUPERVISE_S ?? 2),
  /** How often an idle worker looks for due jobs that came without a NOTIFY (retries, expired jobs). */
  pollSeconds: Number(process.env.CROSSTALK_JOBS_POLL_S ?? 1),
};

export { jobsSchema } from '../store/db';

export async function startJobEngine(o: { pool: pg.Pool; pgSchema?: string; listener?: Listener; log: Logger }): Promise<PgBoss> {
  const db: Db = {
    // As pg-boss's own adapter does (a multi-statement string answers with an array of results: pg-boss reads them).
    executeSql: (text, values) => o.pool.query(text, values as unknown[] | undefined),
    ...(o.listener ? { listen: (channel: string, fn: (payload: string) => void, onReconnect: () => void) => o.listener!.listen(channel, fn, onReconnect) } : {}),
  };
  // Processes starting together on a fresh database: CREATE SCHEMA IF NOT EXISTS races (a unique violation in
  // pg_namespace), so the schema is made first, one process at a time; pg-boss installs its tables under its own lock.
  const schema = jobsSchema(o.pgSchema);
  const c = await o.pool.connect();
  try {
    await c.query('begin');
    await c.query('select pg_advisory_xact_lock(hashtext($1))', [`crosstalk.jobs.${schema}`]);
    await c.query(`create schema if not exists ${schema}`);
    await c.query('commit');
  } catch (e) {
    await c.query('rollback').catch(() => undefined);
    throw e;
  } finally {
    c.release();
  }
  const boss = new PgBoss({
    db,
    schema,
    useListenNotify: !!o.listener,
    superviseIntervalSeconds: ENGINE.superviseSeconds,
    monitorIntervalSeconds: ENGINE.superviseSeconds,
    schedule: false, // no cron here yet
    registerInstance: false, // server/cluster keeps the process registry
    monitorVacuum: false, // a per-pass statistics query; vacuum is the database operator's
    persistWarnings: false,
  });
  boss.on('error', (e) => o.log.warn({ err: (e as Error).message }, 'jobs: engine error'));
  boss.on('warning', (w) => o.log.warn({ warning: (w as { message?: string }).message }, 'jobs: engine warning'));
  await boss.start();
  return boss;
}
