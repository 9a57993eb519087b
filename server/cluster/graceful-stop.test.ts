// Restarts that abort nothing: SIGTERM'd processes under a steady load of turns and async sends stop taking new work,
// finish what ends within the grace, hand the rest over; no client sees an error and no message is lost, doubled or
// left unanswered. 3 processes on one PostgreSQL (rolling restarts), and 1 SQLite process (restarted on its data dir).
import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { rng, sleep } from '../testing/fault-kit';
import { call, type Cluster, follow, newLedger, startCluster, verify, work } from '../testing/fault-load';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const clusters: Cluster[] = [];
afterAll(async () => {
  for (const c of clusters) await c.close();
});

async function rolling(o: { pg: boolean; restarts: number }) {
  const c = await startCluster({ name: o.pg ? 'gpg' : 'gsq', processes: o.pg ? 3 : 1, pgUrl: o.pg ? PG_URL : undefined, strict: true, env: { CROSSTALK_SHUTDOWN_GRACE_MS: '600' }, log: process.env.FAULTS_DEBUG ? (l) => fs.appendFileSync('/tmp/gs-child.log', `${Date.now()} ${l}\n`) : undefined });
  clusters.push(c);
  const r = rng(7);
  const l = newLedger();
  const followers = [follow(() => c.serving(), 'agent:main:f0'), follow(() => [...c.serving()].reverse(), 'agent:main:f1')];
  let n = 0;
  let stop = false;
  // A steady load: 4 clients, each a turn or an async send at a time, to any serving process.
  const clients = Array.from({ length: 4 }, async () => {
    while (!stop) {
      await work(c, r, l, r.pick(['turn', 'async_send', 'turn', 'collect'] as const), n++, 4);
      await sleep(100 + r.int(200));
    }
  });
  // And a client waiting on runs (its wait may be in flight on the process being stopped).
  clients.push(
    (async () => {
      while (!stop) {
        const last = [...l.accepted.values()].at(-1);
        if (!last) await sleep(50);
        else await call(c, r, 'agent.wait', { runId: last.runId, timeoutMs: 3000 }).catch((e) => l.clientErrors.push(`agent.wait: ${(e as Error).message}`));
      }
    })(),
  );
  for (let i = 0; i < o.restarts; i++) {
    await sleep(400);
    const p = c.procs[i % c.procs.length]!;
    if (process.env.FAULTS_DEBUG) fs.appendFileSync('/tmp/gs-child.log', `${Date.now()} SIGTERM ${p.pid}\n`);
    expect(await p.terminate()).toBe(0);
    await p.start();
    if (process.env.FAULTS_DEBUG) fs.appendFileSync('/tmp/gs-child.log', `${Date.now()} restarted ${p.pid}\n`);
  }
  stop = true;
  await Promise.all(clients);
  if (process.env.FAULTS_DEBUG) fs.appendFileSync('/tmp/gs-child.log', `${Date.now()} load stopped: ${l.accepted.size} accepted\n`);
  const t = await verify(c, r, l, followers, { waitMs: 60_000 });
  // One line, so that the end of a CI log (all that is kept of it) names the problems.
  if (t.problems.length) throw new Error(`${t.problems.length} problem(s): ${t.problems.slice(0, 5).join(' | ')}`);
  expect({ lost: t.lost, doubled: t.doubled, unanswered: t.unanswered, clientErrors: t.clientErrors }).toEqual({ lost: 0, doubled: 0, unanswered: 0, clientErrors: 0 });
  expect(t.accepted).toBeGreaterThan(o.restarts);
}

describe('restarts that abort nothing (SIGTERM)', () => {
  it('3 processes on one PostgreSQL, rolling restarts under load: no client error, nothing lost, doubled or unanswered', async () => {
    await rolling({ pg: true, restarts: 3 });
  }, 300_000);

  it('1 SQLite process restarted under load: the restart picks up what the stop left', async () => {
    await rolling({ pg: false, restarts: 2 });
  }, 300_000);
});
