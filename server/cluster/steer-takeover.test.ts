// A message another process answered as steered into a run (CONTRACT §3: "the returned runId is that run's") is
// answered by that run whatever happens to the run's owner (probe E, stop 59): SIGKILLed or SIGSTOPped with the run
// in flight, the process that takes the session over steers it into the re-driven run (it ran as a follow-up under an
// id the client never saw, and `agent.wait` on the answered id gave the run's old reply). And when the run ended
// before the message could be taken in, the run points at the one that answered it (steer-late.test.ts).
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

async function twoProcesses() {
  const schema = `t_steerto_${crypto.randomBytes(4).toString('hex')}`;
  const dataDir = tmpDataDir('crosstalk-steerto-');
  const configFile = path.join(dataDir, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify({ agents: [{ id: 'main' }] }));
  const env = { ...LEASE_ENV, DATABASE_URL: PG_URL, CROSSTALK_TEST_PG_SCHEMA: schema };
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

describe('a steer answered by another process for a run whose owner then dies', () => {
  for (const fault of ['SIGKILL', 'SIGSTOP'] as const) {
    it(`${fault}: the re-driven run takes the message in and its wait answers it, once`, async () => {
      const { a, b, db } = await twoProcesses();
      const key = `agent:main:steer-takeover-${fault.toLowerCase()}`;
      const first = await a.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/sleep 2500\n/reply first' });
      await until(async () => (await db.query('select status from runs where id = $1', [first.runId])).rows[0]?.status === 'running');
      a.child.kill(fault);
      const steered = await b.rpc<{ runId: string; status: string }>('agent', { sessionKey: key, message: '/reply second', queueMode: 'steer', idempotencyKey: `steer-${fault}` });
      if (fault === 'SIGKILL' && steered.status === 'queued') {
        // A killed process's connections close at once, so B may learn of its death before its lease runs out and take
        // the session over in this very request: then the message is queued behind the re-driven run under its own id,
        // and answered there, once.
        expect(await b.rpc('agent.wait', { runId: steered.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok', response: 'second' });
        expect(await b.rpc('agent.wait', { runId: first.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok', response: 'first' });
        const replies = (await b.rpc<History>('chat.history', { sessionKey: key })).messages.filter((m) => m.role === 'assistant');
        expect(replies.map((m) => m.content).sort()).toEqual(['first', 'second']);
        return;
      }
      expect(steered).toEqual({ runId: first.runId, status: 'steered' });
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
      // A repeat of the key gets the first answer.
      expect(await b.rpc('agent', { sessionKey: key, message: '/reply second', queueMode: 'steer', idempotencyKey: `steer-${fault}` })).toEqual(steered);
    }, 60_000);
  }
});
