// Steers across processes (PostgreSQL), CONTRACT §3 "When `agent` is steered into an active run, the returned `runId`
// is that run's" and §4 "No accepted message is ever lost" (probes E and K, stop 59):
// - a message the owner steered into its run, whose process then died (SIGKILL) or stopped (SIGSTOP) before the run
//   took it in, is steered into the run the process that takes the session over re-drives (it ran as a follow-up, and
//   `agent.wait` on the run it was steered into gave that run's old reply);
// - a steer sent to another process is placed by the owner, and answered as the owner placed it: another process
//   answering `steered` on its own promised the message to runs that were ending, or whose process had died;
// - the wait on the answered run id always leads to the message's answer, once.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { pgConnectConfig } from '../store/db';
import { startChildServer, tmpDataDir, until } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const LEASE_ENV = { CROSSTALK_HEARTBEAT_MS: '200', CROSSTALK_DEAD_AFTER_MS: '1500', CROSSTALK_SWEEP_MS: '100', CROSSTALK_PG_POOL: '4' };

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

type Child = Awaited<ReturnType<typeof startChildServer>>;
type History = { messages: Array<{ role: string; kind: string; content: string; runId: string }> };

async function twoProcesses(lease: Record<string, string> = {}) {
  const schema = `t_steerto_${crypto.randomBytes(4).toString('hex')}`;
  const dataDir = tmpDataDir('crosstalk-steerto-');
  const configFile = path.join(dataDir, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify({ agents: [{ id: 'main' }] }));
  const env = { ...LEASE_ENV, ...lease, DATABASE_URL: PG_URL, CROSSTALK_TEST_PG_SCHEMA: schema };
  const a = await startChildServer({ dataDir, configFile, env });
  const b = await startChildServer({ dataDir: tmpDataDir(), configFile, env });
  const db = new pg.Client({ ...pgConnectConfig(PG_URL), options: `-c search_path=${schema}` });
  await db.connect();
  cleanups.push(async () => {
    for (const c of [a, b] as Child[]) {
      c.child.kill('SIGCONT');
      c.kill();
      await c.exited;
    }
    await db.query(`drop schema if exists ${schema} cascade`).catch(() => undefined);
    await db.end();
  });
  return { a, b, db };
}

/** A run of `key` started on A and running (its row says so): the run a steer is sent at. */
async function runningOnA({ a, db }: Awaited<ReturnType<typeof twoProcesses>>, key: string, sleepMs: number): Promise<string> {
  const { runId } = await a.rpc<{ runId: string }>('agent', { sessionKey: key, message: `/sleep ${sleepMs}\n/reply first` });
  await until(async () => (await db.query('select status from runs where id = $1', [runId])).rows[0]?.status === 'running');
  return runId;
}

/** A steer sent to B while A, which runs the session's run, is stopped: the run's id and B's answer. */
async function steerWhileStopped(c: Awaited<ReturnType<typeof twoProcesses>>, key: string, sleepMs: number) {
  const first = await runningOnA(c, key, sleepMs);
  c.a.child.kill('SIGSTOP');
  const r = await c.b.rpc<{ runId: string; status: string }>('agent', { sessionKey: key, message: '/reply second', queueMode: 'steer' });
  return { first, r };
}

describe('a steer the owner took in, whose process then dies', () => {
  for (const fault of ['SIGKILL', 'SIGSTOP'] as const) {
    it(`${fault}: the re-driven run takes the message in and its wait answers it, once`, async () => {
      const c = await twoProcesses();
      const { a, b, db } = c;
      const key = `agent:main:steer-takeover-${fault.toLowerCase()}`;
      const first = { runId: await runningOnA(c, key, 2500) };
      const steered = await a.rpc<{ runId: string; status: string }>('agent', { sessionKey: key, message: '/reply second', queueMode: 'steer', idempotencyKey: `steer-${fault}` });
      expect(steered).toEqual({ runId: first.runId, status: 'steered' });
      a.child.kill(fault);
      // B takes the session over once A's lease has run out, and re-drives the run with the message in it.
      expect(await b.rpc('agent.wait', { runId: steered.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok', response: 'second' });
      const h = (await b.rpc<History>('chat.history', { sessionKey: key })).messages.reverse();
      expect(h.map((m) => [m.role, m.content, m.runId])).toEqual([
        ['user', '/sleep 2500\n/reply first', first.runId],
        ['user', '/reply second', first.runId],
        ['assistant', 'second', first.runId],
      ]);
      // No run of its own answered it: its row was merged into the run it was told.
      const runs = (await db.query('select id, status, merged_into from runs where session_key = $1 order by created_at', [key])).rows;
      expect(runs.map((r) => [r.status, r.merged_into])).toEqual([
        ['ok', null],
        ['merged', first.runId],
      ]);
      // A repeat of the key, on the survivor, gets the first answer.
      expect(await b.rpc('agent', { sessionKey: key, message: '/reply second', queueMode: 'steer', idempotencyKey: `steer-${fault}` })).toEqual(steered);
    }, 60_000);
  }
});

describe('a steer sent to another process than the owner', () => {
  it('the owner stopped: answered with the message\'s own run, which answers it after the re-driven run, once', async () => {
    const c = await twoProcesses();
    const { b } = c;
    const key = 'agent:main:steer-elsewhere-stopped';
    const { first: firstId, r } = await steerWhileStopped(c, key, 2500);
    const first = { runId: firstId };
    // Not `steered` into a run whose process cannot take it in (before: {runId: first, status: "steered"}).
    expect(r.status).toBe('queued');
    expect(r.runId).not.toBe(first.runId);
    expect(await b.rpc('agent.wait', { runId: r.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok', response: 'second' });
    expect(await b.rpc('agent.wait', { runId: first.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok', response: 'first' });
    const replies = (await b.rpc<History>('chat.history', { sessionKey: key })).messages.filter((m) => m.role === 'assistant');
    expect(replies.map((m) => m.content).sort()).toEqual(['first', 'second']);
  }, 60_000);

  it('the owner slow to place it (stopped, then going on within its lease): the wait on the message\'s own run follows it into the run it was steered into', async () => {
    const c = await twoProcesses({ CROSSTALK_DEAD_AFTER_MS: '8000' });
    const { a, b, db } = c;
    const key = 'agent:main:steer-elsewhere-slow';
    const { first: firstId, r } = await steerWhileStopped(c, key, 4000);
    const first = { runId: firstId };
    expect(r.status).toBe('queued');
    const waited = b.rpc<{ status: string; response?: string }>('agent.wait', { runId: r.runId, timeoutMs: 20_000 });
    a.child.kill('SIGCONT');
    // A takes the message in as the steer it was sent as; the wait on its own (merged) run ends with that run's answer.
    // Before, it ran to its timeout.
    expect(await waited).toMatchObject({ status: 'ok', response: 'second' });
    const row = (await db.query('select status, merged_into from runs where id = $1', [r.runId])).rows[0];
    expect(row).toEqual({ status: 'merged', merged_into: first.runId });
  }, 60_000);

  it('as the owner\'s run ends: the wait on whatever run id the answer names leads to the message\'s own answer, once', async () => {
    const { a, b, db } = await twoProcesses();
    for (let i = 0; i < 8; i++) {
      const key = `agent:main:steer-race-${i}`;
      const first = await a.rpc<{ runId: string }>('agent', { sessionKey: key, message: `/sleep 300\n/reply first-${i}` });
      await new Promise((r) => setTimeout(r, 200 + 25 * i));
      const r = await b.rpc<{ runId: string; status: string }>('agent', { sessionKey: key, message: `/reply s-${i}`, queueMode: 'steer' });
      let w = await b.rpc<{ status: string; response?: string; continuedIn?: string }>('agent.wait', { runId: r.runId, timeoutMs: 20_000 });
      if (w.continuedIn) w = await b.rpc('agent.wait', { runId: w.continuedIn, timeoutMs: 20_000 });
      expect({ i, answer: r.status, wait: w }).toMatchObject({ i, wait: { status: 'ok', response: `s-${i}` } });
      expect(await b.rpc('agent.wait', { runId: first.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok' });
      const replies = (await db.query("select content from messages where session_key = $1 and role = 'assistant'", [key])).rows.map((x) => x.content);
      expect(replies.filter((c) => c === `s-${i}`)).toHaveLength(1);
    }
  }, 120_000);
});
