// An idempotent tool (sessions_send) whose store write is cut off by a lost PostgreSQL connection (issue 20: the
// 200-fault run's lost callbacks, a send during a restart answered the model `internal`): the run is re-driven and
// the send made again, once; the target answers and the callback arrives. The loss is real PostgreSQL's SQLSTATE
// 57P01 (admin shutdown, what a restart sends), raised once by a trigger on the target's run insert.
import crypto from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const schema = `t_toolcut_${crypto.randomBytes(4).toString('hex')}`;
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config: { agents: [{ id: 'main' }, { id: 'researcher' }] } });
});
afterAll(async () => {
  if (s) await sql.raw(`drop schema if exists ${schema} cascade`).execute(s.rt.store.db).catch(() => undefined);
  await s?.close();
});

const history = async (sessionKey: string) => (await s.rpc<{ messages: Array<{ content: unknown; role: string; kind: string }> }>('chat.history', { sessionKey, limit: 50 })).messages;

it('a sessions_send cut off by a lost connection is made again by the re-drive: the target runs once, the callback arrives', async () => {
  const db = s.rt.store.db;
  const target = 'agent:researcher:toolcut';
  await sql.raw(`create sequence toolcut_n`).execute(db);
  await sql.raw(`create function toolcut() returns trigger language plpgsql as $$
    begin
      if new.session_key = '${target}' and nextval('toolcut_n') <= 1 then
        raise exception 'terminating connection due to administrator command (test)' using errcode = '57P01';
      end if;
      return new;
    end $$`).execute(db);
  await sql.raw(`create trigger toolcut before insert on runs for each row execute function toolcut()`).execute(db);
  const from = 'agent:main:toolcut';
  await s.rpc('agent', { sessionKey: from, message: `/tool sessions_send {"sessionKey":"${target}","message":"/reply cut-answer","mode":"async"}` });
  // The target ran (once) and its answer came back to the sender as a callback.
  const got = await until(async () => {
    const h = await history(from);
    return h.some((m) => m.kind === 'agent_callback_result' && JSON.stringify(m.content).includes('cut-answer')) && h;
  }, 60_000);
  expect(got).toBeTruthy();
  expect(Number((await sql<{ n: string }>`select last_value::text as n from toolcut_n`.execute(db)).rows[0]!.n)).toBeGreaterThanOrEqual(2); // it was cut off once
  const t = await history(target);
  expect(t.filter((m) => JSON.stringify(m.content).includes('/reply cut-answer'))).toHaveLength(1);
  expect(t.filter((m) => m.role === 'assistant' && JSON.stringify(m.content).includes('cut-answer'))).toHaveLength(1);
  // Its delivery went on to `answered` (the cut-off attempt did not mark it failed).
  const dl = await s.rpc<{ deliveries: Array<{ state: string }> }>('deliveries.list', { sessionKey: from, kind: 'session_message' });
  expect(dl.deliveries.map((d) => d.state)).toEqual(['answered']);
  // The model was never told the send failed.
  expect((await history(from)).filter((m) => JSON.stringify(m.content).includes('sessions_send failed'))).toEqual([]);
  await sql.raw(`drop trigger toolcut on runs`).execute(db);
}, 90_000);

it('two submits of one derived run id racing past the look: the second gets the first run, not a duplicate-key error', async () => {
  const key = 'agent:main:dup-run';
  const runId = `run_dup_${crypto.randomBytes(4).toString('hex')}`;
  const orch = s.rt.orchestrator;
  const first = await orch.submit(key, { content: '/reply once', kind: 'message', author: { type: 'user', id: 'test' } } as never, { runId });
  expect(first.runId).toBe(runId);
  // The second submit's look (getRun) ran before the first's insert committed: it sees no run, then inserts.
  const store = s.rt.store;
  const getRun = store.getRun.bind(store);
  let blinded = 0;
  store.getRun = (async (id: string) => (id === runId && !blinded++ ? undefined : getRun(id))) as typeof store.getRun;
  try {
    const second = await orch.submit(key, { content: '/reply once', kind: 'message', author: { type: 'user', id: 'test' } } as never, { runId });
    expect(second).toMatchObject({ runId, status: 'queued' });
  } finally {
    store.getRun = getRun;
  }
  expect(blinded).toBeGreaterThanOrEqual(1);
  expect(await s.rpc('agent.wait', { runId })).toMatchObject({ status: 'ok', response: 'once' });
  const h = await history(key);
  expect(h.filter((m) => m.role === 'user')).toHaveLength(1);
});
