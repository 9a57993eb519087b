// `npm run bench`, jobs section: pg-boss 12 against graphile-worker 0.18 on the local PostgreSQL, each in a schema
// of its own: enqueue → handler start (one at a time, and a burst), enqueue inside our own Kysely transaction
// (rolled back: never runs; committed: runs), engine start time, and stalled-job recovery (a worker child process
// holding a job is SIGKILLed: how long until another process runs the job, with what each engine needs for it).
// Writes its section of BENCHMARKS.md between the `jobs` markers (figures, never assertions). Bounded: ~40 s.
//   npx tsx bench/jobs.ts [--quick] [--no-md]
//   (child mode, internal: npx tsx bench/jobs.ts --child pgboss|graphile SCHEMA)
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { PgBoss, fromKysely } from 'pg-boss';
import { Logger, run as runGraphile, type Runner } from 'graphile-worker';
import { markedBlock, writeMarked } from './lib/sections';
import { repoRoot } from './lib/server';
import { ms, sleep, summarize, type Summary } from './lib/stats';

const URL = process.env.BENCH_DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test';
const quick = process.argv.includes('--quick');
const log = (m: string) => console.log(`[bench:jobs] ${m}`);
const SINGLE = quick ? 30 : 100;
const BURST = quick ? 200 : 500;
const KILLS = quick ? 2 : 3;
const CONCURRENCY = 10;
const POLL_MS = 500; // pg-boss's floor; graphile-worker set the same (its default is 2 s)
const graphileLogger = () => new Logger(() => () => undefined);

// ── child: takes one job and never finishes it (killed by the parent) ────────────────────────────────
async function child(engine: string, schema: string) {
  const took = (id: string) => process.stdout.write(`took ${id}\n`);
  if (engine === 'pgboss') {
    const boss = new PgBoss({ connectionString: URL, schema, supervise: false, schedule: false, migrate: false, registerInstance: false, useListenNotify: true });
    boss.on('error', () => undefined);
    await boss.start();
    await boss.work('stall', { pollingIntervalSeconds: POLL_MS / 1000, notifyPollingIntervalSeconds: POLL_MS / 1000 }, async ([job]) => {
      took(job!.id);
      await new Promise(() => undefined);
    });
  } else {
    // What graphile-worker needs from us to notice a dead worker: a liveness signal. Like server/cluster, an
    // advisory lock held on a connection of its own for the whole life of the process.
    const lock = new pg.Client({ connectionString: URL });
    await lock.connect();
    await lock.query('select pg_advisory_lock(hashtext($1))', [`bench-jobs-${schema}-${process.pid}`]);
    await runGraphile({
      connectionString: URL,
      schema,
      concurrency: 1,
      pollInterval: POLL_MS,
      noHandleSignals: true,
      logger: graphileLogger(),
      taskList: {
        stall: async (_p, helpers) => {
          took(String(helpers.job.id));
          await new Promise(() => undefined);
        },
      },
    });
  }
  process.stdout.write('ready\n');
}

function spawnChild(engine: string, schema: string) {
  const c = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'jobs.ts'), '--child', engine, schema], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiters: Array<() => void> = [];
  c.stdout!.on('data', (d: Buffer) => {
    lines.push(...d.toString().split('\n').filter(Boolean));
    for (const w of waiters.splice(0)) w();
  });
  const line = async (prefix: string, timeoutMs = 30_000) => {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const l = lines.find((x) => x.startsWith(prefix));
      if (l) return l;
      if (Date.now() > end) throw new Error(`child: no "${prefix}" line`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 200);
      });
    }
  };
  return { c, line };
}

// ── parent ─────────────────────────────────────────────────────────────────────────────────────────
interface Engine {
  name: string;
  startMs: { fresh: number; installed: number };
  /** Enqueue one job for the latency worker; the id it carries. */
  send(i: number): Promise<void>;
  sendBatch(from: number, n: number): Promise<void>;
  /** Enqueue inside a Kysely transaction. */
  sendInTx(tx: Kysely<any>, i: number): Promise<void>;
  /** Jobs stored for latency job i (pending or kept after completion). */
  countJob(i: number): Promise<number>;
  enqueueStall(): Promise<void>;
  startRescue(onStart: () => void): Promise<void>;
  stopRescue(): Promise<void>;
  /** After the child is killed: what must happen before another worker can take its job. */
  recover(childPid: number, jobId: string): Promise<{ detectMs: number }>;
  stop(): Promise<void>;
}

const started = new Map<number, number>();
const waiting = new Map<number, () => void>();
function onJob(i: number) {
  started.set(i, performance.now());
  waiting.get(i)?.();
}
const waitStart = (i: number, timeoutMs = 20_000) =>
  new Promise<void>((resolve, reject) => {
    if (started.has(i)) return resolve();
    const t = setTimeout(() => reject(new Error(`job ${i} never started`)), timeoutMs);
    waiting.set(i, () => (clearTimeout(t), resolve()));
  });

async function pgBoss(schema: string, pool: pg.Pool): Promise<Engine> {
  // Best configuration for latency and recovery: LISTEN/NOTIFY on, polling at its 0.5 s floor, expiry and
  // supervision every second (the floors), burst fetching of full batches.
  const options = { connectionString: URL, schema, useListenNotify: true, superviseIntervalSeconds: 1, monitorIntervalSeconds: 1, registerInstance: false };
  let t = performance.now();
  const boss = new PgBoss(options);
  boss.on('error', (e) => log(`pg-boss error: ${e.message}`));
  await boss.start();
  const fresh = performance.now() - t;
  await boss.stop({ graceful: false, close: true });
  t = performance.now();
  const b = new PgBoss(options);
  b.on('error', (e) => log(`pg-boss error: ${e.message}`));
  await b.start();
  const installed = performance.now() - t;
  let rescueId = '';
  await b.createQueue('lat', { notify: true });
  await b.createQueue('stall', { notify: true, expireInSeconds: 1, retryLimit: 5, retryDelay: 0 });
  await b.work<{ i: number }>('lat', { localConcurrency: CONCURRENCY / 5, batchSize: 5, burstWhenBatchFull: true, pollingIntervalSeconds: POLL_MS / 1000, notifyPollingIntervalSeconds: POLL_MS / 1000 }, async (jobs) => {
    for (const j of jobs) onJob(j.data.i);
  });
  return {
    name: 'pg-boss 12',
    startMs: { fresh, installed },
    send: async (i) => void (await b.send('lat', { i })),
    sendBatch: async (from, n) => void (await b.insert('lat', Array.from({ length: n }, (_, k) => ({ data: { i: from + k } })))),
    sendInTx: async (tx, i) => void (await b.send('lat', { i }, { db: fromKysely(tx) })),
    countJob: async (i) => Number((await pool.query(`select count(*) from ${schema}.job where name = 'lat' and data->>'i' = $1`, [String(i)])).rows[0].count),
    enqueueStall: async () => void (await b.send('stall', {})),
    startRescue: async (onStart) => void (rescueId = await b.work('stall', { pollingIntervalSeconds: POLL_MS / 1000, notifyPollingIntervalSeconds: POLL_MS / 1000 }, async () => onStart())),
    stopRescue: async () => void (await b.offWork('stall', { id: rescueId, wait: true })),
    recover: async () => ({ detectMs: NaN }), // the engine's own expiry does it
    stop: () => b.stop({ graceful: true, timeout: 2000 }),
  };
}

async function graphile(schema: string, pool: pg.Pool): Promise<Engine> {
  const base = { pgPool: pool, schema, pollInterval: POLL_MS, noHandleSignals: true, logger: graphileLogger() };
  let rescue: (() => void) | null = null;
  const taskList = {
    lat: async (p: unknown) => onJob((p as { i: number }).i),
    stall: async () => rescue?.(),
  };
  let t = performance.now();
  let runner: Runner = await runGraphile({ ...base, concurrency: CONCURRENCY, taskList: { lat: taskList.lat } });
  const fresh = performance.now() - t;
  await runner.stop();
  t = performance.now();
  runner = await runGraphile({ ...base, concurrency: CONCURRENCY, taskList: { lat: taskList.lat } });
  const installed = performance.now() - t;
  let rescueRunner: Runner | null = null;
  const addJob = (tx: Kysely<any> | pg.Pool, task: string, payload: object) =>
    tx instanceof pg.Pool ? tx.query(`select ${schema}.add_job($1, $2::json)`, [task, JSON.stringify(payload)]) : sql`select ${sql.id(schema)}.add_job(${task}, ${JSON.stringify(payload)}::json)`.execute(tx);
  return {
    name: 'graphile-worker 0.18',
    startMs: { fresh, installed },
    send: async (i) => void (await addJob(pool, 'lat', { i })),
    sendBatch: async (from, n) =>
      void (await pool.query(`select ${schema}.add_jobs(array(select json_populate_record(null::${schema}.job_spec, json_build_object('identifier', 'lat', 'payload', json_build_object('i', g))) from generate_series($1::int, $2::int) g))`, [from, from + n - 1])),
    sendInTx: async (tx, i) => void (await addJob(tx, 'lat', { i })),
    // Completed jobs are deleted: a job still stored here has not run.
    countJob: async (i) => Number((await pool.query(`select count(*) from ${schema}._private_jobs where payload->>'i' = $1`, [String(i)])).rows[0].count),
    enqueueStall: async () => void (await addJob(pool, 'stall', {})),
    startRescue: async (onStart) => {
      rescue = onStart;
      rescueRunner = await runGraphile({ ...base, concurrency: 1, taskList: { stall: taskList.stall } });
    },
    stopRescue: async () => {
      await rescueRunner?.stop();
      rescueRunner = null;
    },
    recover: async (childPid, jobId) => {
      // Detect the death as server/cluster does (its advisory lock is gone; the sweep runs every 250 ms), then
      // force-unlock the dead pool's jobs and wake the workers. Without this the job stays locked for 4 hours.
      const t0 = performance.now();
      for (;;) {
        const held = await pool.query(`select 1 from pg_locks where locktype = 'advisory' and granted and objid::bigint = (hashtext($1)::bigint & 4294967295)`, [`bench-jobs-${schema}-${childPid}`]);
        if (!held.rowCount) break;
        await sleep(250);
      }
      const detectMs = performance.now() - t0;
      const lockedBy = (await pool.query(`select locked_by from ${schema}._private_jobs where id = $1`, [jobId])).rows[0]?.locked_by;
      await pool.query(`select ${schema}.force_unlock_workers($1::text[])`, [[lockedBy]]);
      await pool.query(`select pg_notify('jobs:insert', '{"count":1}')`);
      return { detectMs };
    },
    stop: () => runner.stop(),
  };
}

async function measure(make: (schema: string, pool: pg.Pool) => Promise<Engine>, label: string) {
  const schema = `bench_jobs_${label}_${crypto.randomBytes(3).toString('hex')}`;
  const pool = new pg.Pool({ connectionString: URL, max: 10 });
  const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
  started.clear();
  const e = await make(schema, pool);
  log(`${e.name}: start ${ms(e.startMs.fresh)} (installing) / ${ms(e.startMs.installed)}`);
  let i = 0;
  // One at a time.
  for (let w = 0; w < 10; w++) {
    const k = i++;
    await e.send(k);
    await waitStart(k);
  }
  const single: number[] = [];
  for (let n = 0; n < SINGLE; n++) {
    const k = i++;
    const t = performance.now();
    await e.send(k);
    await waitStart(k);
    single.push(started.get(k)! - t);
    await sleep(5);
  }
  log(`${e.name}: one at a time p50 ${ms(summarize(single).p50)}`);
  // A burst, enqueued in one statement.
  const from = i;
  i += BURST;
  const tb = performance.now();
  await e.sendBatch(from, BURST);
  await Promise.all(Array.from({ length: BURST }, (_, k) => waitStart(from + k, 60_000)));
  const burst = Array.from({ length: BURST }, (_, k) => started.get(from + k)! - tb);
  const drain = Math.max(...burst);
  log(`${e.name}: burst of ${BURST} drained in ${ms(drain)}`);
  // Our own transaction: a table of ours and the job in one commit; a rollback leaves no job.
  await db.schema.createTable(`${schema}.ours`).addColumn('id', 'integer').execute();
  const inTx: number[] = [];
  for (let n = 0; n < 20; n++) {
    const k = i++;
    await db.transaction().execute(async (tx) => {
      await tx.insertInto(`${schema}.ours`).values({ id: k }).execute();
      const t = performance.now();
      await e.sendInTx(tx, k);
      inTx.push(performance.now() - t);
    });
    await waitStart(k);
  }
  const rolledBack = i++;
  await db
    .transaction()
    .execute(async (tx) => {
      await tx.insertInto(`${schema}.ours`).values({ id: rolledBack }).execute();
      await e.sendInTx(tx, rolledBack);
      throw new Error('rollback');
    })
    .catch(() => undefined);
  await sleep(POLL_MS * 2);
  const txOk = !started.has(rolledBack) && (await e.countJob(rolledBack)) === 0;
  log(`${e.name}: in-transaction enqueue ${txOk ? 'works' : 'FAILED'} (20 commits ran; the rolled-back job ${txOk ? 'does not exist' : 'EXISTS'})`);
  // Stalled-job recovery: a child process takes a job and is SIGKILLed.
  const recovery: number[] = [];
  const detect: number[] = [];
  let stillLockedAfter: number | null = null;
  // graphile-worker: one more kill, not counted, to see the job stay locked when nobody force-unlocks it.
  const rounds = KILLS + (label === 'graphile' ? 1 : 0);
  for (let s = 0; s < rounds; s++) {
    const demo = s === KILLS;
    const { c, line } = spawnChild(label, schema);
    await line('ready');
    await e.enqueueStall();
    const jobId = (await line('took')).split(' ')[1]!;
    let rescued!: () => void;
    const rescuedP = new Promise<void>((r) => (rescued = r));
    let rescuedAt = 0;
    await e.startRescue(() => {
      rescuedAt = performance.now();
      rescued();
    });
    c.kill('SIGKILL');
    const killedAt = performance.now();
    if (demo) {
      await sleep(3000);
      const locked = (await pool.query(`select locked_by from ${schema}._private_jobs where id = $1`, [jobId])).rows[0]?.locked_by;
      stillLockedAfter = locked && !rescuedAt ? performance.now() - killedAt : 0;
    }
    const r = await e.recover(c.pid!, jobId);
    await Promise.race([rescuedP, sleep(30_000)]);
    await e.stopRescue();
    if (demo) {
      log(`${e.name}: without a force-unlock the job was ${stillLockedAfter ? 'still locked' : 'NOT locked'} 3 s after the kill`);
      continue;
    }
    if (rescuedAt) recovery.push(rescuedAt - killedAt);
    if (Number.isFinite(r.detectMs)) detect.push(r.detectMs);
    log(`${e.name}: kill ${s + 1}: another process ran the job ${rescuedAt ? `${ms(recovery.at(-1))} after the kill` : 'NEVER (30 s)'}`);
  }
  const ts = performance.now();
  await e.stop();
  const stopMs = performance.now() - ts;
  await db.destroy();
  const cleanup = new pg.Client({ connectionString: URL });
  await cleanup.connect();
  await cleanup.query(`drop schema if exists ${schema} cascade`);
  await cleanup.end();
  return { name: e.name, start: e.startMs, stopMs, single: summarize(single), burst: summarize(burst), drain, inTx: summarize(inTx), txOk, recovery: summarize(recovery), detect: summarize(detect), stillLockedAfter };
}

async function main() {
  const version = (p: string) => JSON.parse(fs.readFileSync(path.join(repoRoot, 'node_modules', p, 'package.json'), 'utf8')).version as string;
  const versions = { boss: version('pg-boss'), gw: version('graphile-worker') };
  log(`pg-boss ${versions.boss}, graphile-worker ${versions.gw}`);
  const results = [await measure(pgBoss, 'pgboss'), await measure(graphile, 'graphile')];
  const [b, g] = results as [Awaited<ReturnType<typeof measure>>, Awaited<ReturnType<typeof measure>>];
  const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const pct = (s: Summary) => `${ms(s.p50)} / ${ms(s.p99)}`;
  const row = (what: string, f: (r: typeof b) => string) => `| ${what} | ${f(b)} | ${f(g)} |`;
  const lines = [
    `## Job engines: pg-boss ${versions.boss} against graphile-worker ${versions.gw}`,
    '',
    `Measured by \`bench/jobs.ts\` (part of \`npm run bench\`) on ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, PostgreSQL on 127.0.0.1, 2 cores shared, load average ${load} at the end of the run.`,
    `Each engine in a schema of its own, workers in the bench process (concurrency ${CONCURRENCY}), polling every ${POLL_MS} ms (pg-boss's floor; graphile-worker's default is 2 s), LISTEN/NOTIFY on for both.`,
    "pg-boss: `useListenNotify`, queues with `notify`, `notifyPollingIntervalSeconds` at the same 0.5 s (its default, 30 s, is also how late a retried or expired job is seen: those come without a NOTIFY), batches of 5 with `burstWhenBatchFull`, supervision and monitoring every 1 s (the floors).",
    'Handlers return at once. Stalled job: a child process takes a job and hangs; it is SIGKILLed, and a worker of the bench process must run the job.',
    '',
    '| | pg-boss 12 | graphile-worker 0.18 |',
    '| --- | --- | --- |',
    row('engine start, installing its schema / schema already there', (r) => `${ms(r.start.fresh)} / ${ms(r.start.installed)}`),
    row(`enqueue → handler start, one at a time, p50 / p99 (${SINGLE} jobs)`, (r) => pct(r.single)),
    row(`enqueue → handler start, burst of ${BURST} in one statement, p50 / p99; all done`, (r) => `${pct(r.burst)}; ${ms(r.drain)}`),
    row('enqueue inside our own Kysely transaction (rollback: no job; commit: runs)', (r) => `${r.txOk ? 'yes' : 'FAILED'}, ${ms(r.inTx.p50)} p50 (${r.name.startsWith('pg-boss') ? '`send(…, { db: fromKysely(tx) })`' : '`select add_job(…)` on tx'})`),
    row(`worker child process SIGKILLed holding a job → another process runs it, p50 / max (${KILLS} kills)`, (r) => `${ms(r.recovery.p50)} / ${ms(r.recovery.max)}`),
    row('what that took', (r) =>
      r.name.startsWith('pg-boss')
        ? 'nothing of ours: the queue\'s `expireInSeconds: 1` (its floor; it must exceed the handler\'s run time) and the supervisor\'s expiry pass (every 1 s); `heartbeatSeconds` (floor 10 s) for long jobs'
        : `our own liveness (an advisory lock per process, swept every 250 ms: ${ms(r.detect.p50)} to notice), then \`force_unlock_workers\` with the dead pool's id and a wake-up; without it the job ${r.stillLockedAfter ? `was still locked ${ms(r.stillLockedAfter)} after the kill and ` : ''}stays locked for 4 hours`),
    row('graceful stop of the workers', (r) => ms(r.stopMs)),
    '',
    'Retries, dead letters and the rest, from the engines\' code (0.18.0 and 12.x):',
    '',
    '| | pg-boss 12 | graphile-worker 0.18 |',
    '| --- | --- | --- |',
    '| retry delay | `retryDelay` (whole seconds) × 2^n with jitter when `retryBackoff`, capped by `retryDelayMax`; per queue or per job | fixed `exp(min(attempts, 10))` seconds (2.7 s, 7.4 s, 20 s, …), not configurable |',
    '| dead letter | a queue\'s `deadLetter` queue receives the job when its retries are exhausted | none: the job stays in the table with `attempts = max_attempts` |',
    '| stalled job | `expireInSeconds` / `heartbeatSeconds`, found by any instance\'s supervisor | locks kept 4 h unless `force_unlock_workers(ids)` is called with the dead workers\' ids (we must detect the death) |',
    '| connections | its own pool, or ours through an adapter (`db`: `executeSql`, optional `listen`) | `pgPool`: ours; LISTEN holds one of its connections for the life of the runner |',
    '',
    `Reading: both dispatch a lone job in a few milliseconds through LISTEN/NOTIFY (graphile-worker a little faster here:`,
    `${ms(g.single.p50)} against ${ms(b.single.p50)} p50), and both enqueue inside our transaction. A killed worker's job came back faster on`,
    `graphile-worker (${ms(g.recovery.p50)} against ${ms(b.recovery.p50)}), but only through code of ours: a liveness check per process and a`,
    'force-unlock with the dead pool\'s ids; on its own it holds the job for 4 hours. pg-boss recovers it by itself',
    '(expiry, any instance\'s supervisor), and gives configurable exponential backoff and dead-letter queues, which',
    'graphile-worker does not. What we write ourselves should be only what no engine gives (issue 11): crosstalk\'s',
    'webhooks run on pg-boss. Its expiry must outlast the handler (for a webhook: the POST timeout plus a margin), so a',
    'webhook held by a killed process is retried about that long after it was taken, plus up to 2 s.',
  ];
  const body = lines.join('\n');
  console.log(markedBlock('jobs', body));
  if (!process.argv.includes('--no-md')) {
    const file = path.join(repoRoot, quick ? '.bench/BENCHMARKS.quick.md' : 'BENCHMARKS.md');
    writeMarked(file, 'jobs', body);
    log(`wrote ${path.relative(repoRoot, file)}`);
  }
}

const ci = process.argv.indexOf('--child');
if (ci >= 0) {
  void child(process.argv[ci + 1]!, process.argv[ci + 2]!).catch((e) => {
    console.error(e);
    process.exit(1);
  });
} else {
  const timer = setTimeout(() => {
    console.error('[bench:jobs] took over 120 s; giving up');
    process.exit(1);
  }, 120_000);
  timer.unref();
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
