// `npm run faults`: gateway processes on one PostgreSQL and one SQLite process under a seeded load of every kind of
// work, with seeded faults (SIGKILL, SIGSTOP past the lease, the liveness connection terminated, PostgreSQL restarted,
// a webhook receiver that hangs, SIGTERM); then counted from the public API only. FAULTS_MODE=rolling: rolling
// SIGTERM restarts under a steady load instead. A failing run prints its seed and a one-line repro.
//
// FAULTS_SEED (default: random), FAULTS_COUNT (faults; default 8), FAULTS_PROCESSES (default 3),
// FAULTS_PG_URL (default TEST_DATABASE_URL or postgres://127.0.0.1:5432/test), FAULTS_PG_RESTART (a shell command that
// restarts that PostgreSQL; unset: that fault is not injected), FAULTS_MODE=rolling with FAULTS_RESTARTS (default 100),
// FAULTS_SQLITE=0 (skip the SQLite process), FAULTS_PG=0 (skip the PostgreSQL processes), FAULTS_KINDS (only these kinds, comma-separated), FAULTS_COVER=1 (each kind at least once), FAULTS_JSON=<file> (write the tally), FAULTS_WAIT_MS (how long the check
// waits for runs to end; default 60000).
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import pg from 'pg';
import { rng, sleep } from '../server/testing/fault-kit';
import { approvePending, type Cluster, follow, type Kind, KINDS, newLedger, startCluster, type Tally, verify, work } from '../server/testing/fault-load';
import type { Proc } from '../server/testing/fault-kit';
import { buildChildBundles } from '../server/testing/child-bundle';
import { pgConnectConfig } from '../server/store/db';
import { clusterNamespace } from '../server/cluster/cluster';

const env = process.env;
const seed = Number(env.FAULTS_SEED ?? Math.floor(Math.random() * 2 ** 31));
const mode = env.FAULTS_MODE === 'rolling' ? 'rolling' : 'faults';
const COUNT = Number(env.FAULTS_COUNT ?? 8);
const RESTARTS = Number(env.FAULTS_RESTARTS ?? 100);
const PROCESSES = Number(env.FAULTS_PROCESSES ?? 3);
const PG_URL = env.FAULTS_PG_URL ?? env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const PG_RESTART = env.FAULTS_PG_RESTART;
const DEAD_AFTER_MS = 3000;
const GRACE_MS = 1000;
const t0 = Date.now();
const say = (m: string) => console.log(`[faults ${((Date.now() - t0) / 1000).toFixed(1)}s ${new Date().toISOString().slice(11, 23)}] ${m}`);
const repro = () =>
  `FAULTS_SEED=${seed}${mode === 'rolling' ? ` FAULTS_MODE=rolling FAULTS_RESTARTS=${RESTARTS}` : ` FAULTS_COUNT=${COUNT}`}${['FAULTS_COVER', 'FAULTS_KINDS', 'FAULTS_PG', 'FAULTS_SQLITE', 'FAULTS_PROCESSES'].filter((k) => env[k]).map((k) => ` ${k}=${env[k]}`).join('')} npm run faults`;
const debugLog = env.FAULTS_DEBUG ? (l: string) => fs.appendFileSync(env.FAULTS_DEBUG!, `${Date.now()} ${l}\n`) : undefined;

type FaultKind = 'sigkill' | 'sigstop' | 'liveness' | 'pg_restart' | 'webhook_hang' | 'sigterm';
const injected = new Map<string, number>();
const inject = (k: string) => injected.set(k, (injected.get(k) ?? 0) + 1);

const r = rng(seed);
const clusters: Cluster[] = [];

// A gateway that exits by itself (no fault of ours killed or stopped it) is a defect: said with its last stderr
// lines, counted as a problem, and started again so the load goes on.
const crashes: string[] = [];
const onCrash = (p: Proc, exit: string, stderr: string[]) => {
  const line = `${p.o.name} (pid ${p.pid}) exited by itself (${exit})${stderr.length ? `; its last stderr: ${stderr.slice(-5).join(' | ').slice(0, 800)}` : ''}`;
  crashes.push(line);
  say(`CRASH: ${line}`);
  void (async () => {
    for (let i = 0; i < 20 && !p.alive; i++) {
      try {
        await p.start();
      } catch {
        await sleep(1000);
      }
    }
  })();
};

async function pgQuery<T extends pg.QueryResultRow>(q: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client(pgConnectConfig(PG_URL));
  await c.connect();
  try {
    return (await c.query<T>(q, params)).rows;
  } finally {
    await c.end().catch(() => undefined);
  }
}

async function waitPg(): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      await pgQuery('select 1');
      return;
    } catch {
      await sleep(100);
    }
  }
  throw new Error('PostgreSQL did not come back in 60 s');
}

/** One seeded fault on a cluster. The victim is a serving process; SQLite's only process is never left dead. */
async function fault(c: Cluster, kind: FaultKind, schema: string | null): Promise<void> {
  const victims = c.procs.filter((p) => p.serving);
  const v = victims.length ? r.pick(victims) : null;
  switch (kind) {
    case 'sigkill':
      if (!v) return;
      say(`${c.name}: SIGKILL ${v.o.name} (pid ${v.pid})`);
      c.kills.push(Date.now());
      await v.kill();
      await v.start();
      break;
    case 'sigterm':
      if (!v) return;
      say(`${c.name}: SIGTERM ${v.o.name} (pid ${v.pid}) and start it again`);
      await v.terminate();
      await v.start();
      break;
    case 'sigstop':
      if (!v) return;
      say(`${c.name}: SIGSTOP ${v.o.name} (pid ${v.pid}) past its lease, then SIGCONT`);
      v.signal('SIGSTOP');
      await sleep(DEAD_AFTER_MS + 1500);
      v.signal('SIGCONT');
      break;
    case 'liveness': {
      if (!v || !schema) return;
      const rows = await pgQuery<{ pid: number }>(
        `select l.pid from pg_locks l join ${schema}.processes p on l.objid::bigint = p.lock_key
         where l.locktype = 'advisory' and l.granted and l.classid::bigint = $2 and l.objsubid = 2 and p.status = 'alive' and p.pid = $1`,
        [v.pid, clusterNamespace(schema)],
      );
      say(`${c.name}: pg_terminate_backend on ${v.o.name}'s liveness connection (${rows.length} found)`);
      for (const row of rows) await pgQuery('select pg_terminate_backend($1)', [row.pid]);
      break;
    }
    case 'pg_restart':
      say(`PostgreSQL restarted: ${PG_RESTART}`);
      // The restarted server must not inherit our stdio (its log would land here, and a pipe would hold execSync).
      execSync(PG_RESTART!, { stdio: 'ignore' });
      await waitPg();
      break;
    case 'webhook_hang':
      say(`${c.name}: the webhook receiver hangs for 4 s`);
      c.webhooks.hangFor(4000);
      break;
  }
  inject(`${kind}${c.name === 'sqlite' ? ' (SQLite)' : ''}`);
}

async function main(): Promise<number> {
  say(`seed ${seed}, mode ${mode}; repro: ${repro()}`);
  // The gateway processes start from one bundle, built now (server/testing/child-bundle.ts): 0.75 s of CPU a start
  // instead of 1.45 s through tsx, on the 2 cores the load, the clients and PostgreSQL share.
  await buildChildBundles();
  const baseEnv = { CROSSTALK_DEAD_AFTER_MS: String(DEAD_AFTER_MS), CROSSTALK_SHUTDOWN_GRACE_MS: String(GRACE_MS) };
  // FAULTS_PG=0: the SQLite process only (faults mode).
  const withPg = mode === 'rolling' || env.FAULTS_PG !== '0';
  const pgc = withPg ? await startCluster({ name: 'pg', processes: mode === 'rolling' ? 3 : PROCESSES, pgUrl: PG_URL, env: baseEnv, log: debugLog, strict: mode === 'rolling', onCrash }) : null;
  if (pgc) clusters.push(pgc);
  const schema = pgc?.schema ?? null;
  const sq = mode === 'faults' && env.FAULTS_SQLITE !== '0' ? await startCluster({ name: 'sqlite', processes: 1, env: baseEnv, log: debugLog, onCrash }) : null;
  if (sq) clusters.push(sq);
  if (!pgc && !sq) throw new Error('FAULTS_PG=0 with FAULTS_SQLITE=0 leaves nothing to run');
  say(`started: ${pgc ? `${pgc.procs.length} processes on PostgreSQL (schema ${schema})` : 'no PostgreSQL processes'}${sq ? ', 1 on SQLite' : ''}`);

  const state = clusters.map((c) => ({ c, l: newLedger(), followers: [follow(() => c.serving(), 'agent:main:f0'), follow(() => [...c.serving()].reverse(), 'agent:main:f1')] }));
  let stop = false;
  let n = 0;
  const kinds: readonly Kind[] = mode === 'rolling' ? (['turn', 'async_send'] as const) : KINDS;
  // Each client draws its own sequence from a generator seeded off the run's seed.
  const loops = state.flatMap(({ c, l }, ci) => [
    ...Array.from({ length: 3 }, (_, k) =>
      (async () => {
        const cr = rng(seed * 31 + ci * 7 + k);
        while (!stop) {
          await work(c, cr, l, cr.pick(kinds), n++, 6);
          await sleep(100 + cr.int(300));
        }
      })(),
    ),
    (async () => {
      const cr = rng(seed + 1000 + ci);
      while (!stop) {
        await approvePending(c, cr, l);
        await sleep(300);
      }
    })(),
  ]);

  if (mode === 'rolling') {
    for (let i = 0; i < RESTARTS; i++) {
      const p = pgc!.procs[i % pgc!.procs.length]!;
      const code = await p.terminate();
      if (code !== 0) say(`${p.o.name} exited ${code} after SIGTERM`);
      await p.start();
      inject('rolling restart (SIGTERM + start)');
      if ((i + 1) % 10 === 0) say(`${i + 1} restarts`);
    }
  } else {
    // FAULTS_KINDS (comma-separated) narrows the kinds drawn, e.g. to repeat one kind of fault many times.
    const only = env.FAULTS_KINDS ? new Set(env.FAULTS_KINDS.split(',').map((k) => k.trim())) : null;
    const allowed = (k: FaultKind) => !only || only.has(k);
    const pgFaults = (['sigkill', 'sigstop', 'liveness', 'webhook_hang', 'sigterm', ...(PG_RESTART ? (['pg_restart'] as const) : [])] as FaultKind[]).filter(allowed);
    const sqFaults = (['sigkill', 'sigterm', 'webhook_hang'] as FaultKind[]).filter(allowed);
    if ((pgc && !pgFaults.length) || (sq && !sqFaults.length)) throw new Error(`FAULTS_KINDS=${env.FAULTS_KINDS} leaves no fault to draw for ${pgc && !pgFaults.length ? 'PostgreSQL' : 'SQLite'}`);
    if (!PG_RESTART) say('FAULTS_PG_RESTART is unset: PostgreSQL restarts are not injected');
    // FAULTS_COVER=1: every kind allowed is injected at least once (on each store that has it), in a seeded order;
    // FAULTS_COUNT beyond that are drawn at random as usual.
    const cover: Array<{ c: Cluster; kind: FaultKind }> = env.FAULTS_COVER === '1' ? [...(pgc ? pgFaults.map((kind) => ({ c: pgc, kind })) : []), ...(sq ? sqFaults.map((kind) => ({ c: sq, kind })) : [])] : [];
    for (let i = cover.length - 1; i > 0; i--) {
      const j = r.int(i + 1);
      [cover[i], cover[j]] = [cover[j]!, cover[i]!];
    }
    for (let i = 0; i < Math.max(COUNT, cover.length); i++) {
      await sleep(300 + r.int(1200));
      const planned = cover[i];
      if (planned) {
        await fault(planned.c, planned.kind, planned.c === pgc ? schema : null);
        continue;
      }
      const onSqlite = sq && (!pgc || (sqFaults.length > 0 && r.next() < 0.25));
      await fault(onSqlite ? sq : pgc!, r.pick(onSqlite ? sqFaults : pgFaults), onSqlite ? null : schema);
    }
  }
  await sleep(1000);
  stop = true;
  await Promise.all(loops);
  say('load stopped; checking from the public API');

  const tallies: Array<{ name: string; t: Tally }> = [];
  for (const { c, l, followers } of state) tallies.push({ name: c.name, t: await verify(c, r, l, followers, { waitMs: Number(env.FAULTS_WAIT_MS ?? 60_000) }) });

  console.log('\nfaults injected:');
  for (const [k, v] of [...injected].sort()) console.log(`  ${k}: ${v}`);
  console.log('\n| store | accepted | answered | lost | doubled | unanswered | callbacks | webhooks (redelivered) | channel sends (again after a kill) | exec lines | SSE reconnects | client errors | resent after a kill |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const { name, t } of tallies) {
    console.log(`| ${name} | ${t.accepted} | ${t.answered} | ${t.lost} | ${t.doubled} | ${t.unanswered} | ${t.callbacks} | ${t.webhooks} (${t.webhookRedeliveries}) | ${t.channelSends} (${t.channelResentAfterKill}) | ${t.execLines} | ${t.sseReconnects} | ${t.clientErrors} | ${t.resends} |`);
  }
  for (const { name, t } of tallies)
    if (t.steeredOver) console.log(`${name}: ${t.steeredOver} async send(s) or detached delegate(s) never started: a message steered into the turn before its first model step hid its /tool line (the scripted model reads the newest message); no callback owed`);
  if (env.FAULTS_JSON) fs.writeFileSync(env.FAULTS_JSON, JSON.stringify({ seed, mode, injected: Object.fromEntries(injected), tallies }, null, 2));
  const problems = [...crashes.map((c) => `a gateway crashed: ${c}`), ...tallies.flatMap(({ name, t }) => t.problems.map((p) => `${name}: ${p}`))];
  if (problems.length) {
    console.log(`\n${problems.length} problem(s):`);
    for (const p of problems.slice(0, 50)) console.log(`  ${p}`);
    console.log(`\nFAILED (seed ${seed}). Repeat with: ${repro()}`);
    return 1;
  }
  console.log(`\nOK (seed ${seed}) in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  return 0;
}

let code = 1;
try {
  code = await main();
} catch (e) {
  console.error(e);
  console.log(`\nFAILED (seed ${seed}). Repeat with: ${repro()}`);
} finally {
  if (PG_RESTART) await waitPg().catch(() => undefined); // up again before the clusters drop their schemas
  for (const c of clusters) await c.close().catch(() => undefined);
}
process.exit(code);
