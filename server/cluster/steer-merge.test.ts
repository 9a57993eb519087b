// A message steered into a running run on PostgreSQL: its queued run is merged in the statement that writes its row
// into that run (issue 20's doubled steer: the process died between the row and the merge, and the re-driver ran
// the still-queued steer run as a follow-up, so the message was in the transcript twice).
import crypto from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const schema = `t_steermerge_${crypto.randomBytes(4).toString('hex')}`;
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config: { agents: [{ id: 'main' }] } });
});
afterAll(async () => {
  if (s) await sql.raw(`drop schema if exists ${schema} cascade`).execute(s.rt.store.db).catch(() => undefined);
  await s?.close();
});

it('a steered message whose separate merge never happens (the process died) leaves no queued run behind', async () => {
  const key = 'agent:main:steer-merge';
  const store = s.rt.store;
  const real = store.updateRunFenced.bind(store);
  let stopped = 0;
  // The process "dies" after writing the steered row: the merge it would record next never lands.
  store.updateRunFenced = (async (id, sessionKey, fields) => {
    if (fields.status === 'merged') {
      stopped++;
      return;
    }
    return real(id, sessionKey, fields);
  }) as typeof store.updateRunFenced;
  try {
    const first = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/sleep 800\n/reply first' });
    await until(async () => (await store.getRun(first.runId))?.status === 'running');
    const steered = await s.rpc<{ runId: string; status: string }>('agent', { sessionKey: key, message: 'steered in', queueMode: 'steer' });
    expect(steered.status).toBe('steered');
    await s.rpc('agent.wait', { runId: first.runId });
    await until(() => stopped > 0);
    expect(steered.runId).toBe(first.runId); // answered with the run it joined; its own queued run carries the input
    const own = await store.db.selectFrom('runs').selectAll().where('session_key', '=', key).where('id', '<>', first.runId).execute();
    expect(own.map((r) => ({ status: r.status, merged_into: r.merged_into }))).toEqual([{ status: 'merged', merged_into: first.runId }]);
  } finally {
    store.updateRunFenced = real;
  }
}, 40_000);
