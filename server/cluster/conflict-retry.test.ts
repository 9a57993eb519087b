// A run's fenced writes on PostgreSQL that lose a lock conflict (issue 20: `deadlock detected`, 40P01, under the
// fault load) are made again, not taken for the run's failure: the run's end is recorded, its answer is in the
// transcript, and the run row says `ok`. The conflict is real PostgreSQL's: a trigger raises 40P01 once.
import crypto from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { settledEvents, startTestServer, type TestServer, until } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const schema = `t_conflict_${crypto.randomBytes(4).toString('hex')}`;
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config: { agents: [{ id: 'main' }], webhooks: { allowPrivateNetwork: true } } });
});
afterAll(async () => {
  if (s) await sql.raw(`drop schema if exists ${schema} cascade`).execute(s.rt.store.db).catch(() => undefined);
  await s?.close();
});

/** The next `times` writes `when` matches on `table` fail with a real 40P01 (a sequence counts: it is not rolled back). */
async function deadlockOnce(name: string, table: string, when: string, times = 1): Promise<() => Promise<number>> {
  const db = s.rt.store.db;
  await sql.raw(`create sequence ${name}_n`).execute(db);
  await sql.raw(`create function ${name}() returns trigger language plpgsql as $$
    begin
      if (${when}) and nextval('${name}_n') <= ${times} then
        raise exception 'deadlock detected (test)' using errcode = '40P01';
      end if;
      return new;
    end $$`).execute(db);
  await sql.raw(`create trigger ${name} before insert or update on ${table} for each row execute function ${name}()`).execute(db);
  return async () => {
    const r = await sql<{ n: string }>`select last_value::text as n from ${sql.raw(`${name}_n`)}`.execute(db);
    await sql.raw(`drop trigger ${name} on ${table}`).execute(db);
    return Number(r.rows[0]!.n);
  };
}

/** What the process logged at warn or error since the test began (a run failed, dropped or re-driven). */
let logged: string[] = [];
const troubles = () => logged.filter((m) => /run end|re-driven|not being driven|crashed|failed|lost/.test(m));
beforeEach(() => {
  logged = [];
  const log = s.rt.log as unknown as Record<'warn' | 'error', (...a: unknown[]) => void>;
  for (const level of ['warn', 'error'] as const) {
    const orig = log[level]!.bind(log);
    log[level] = (...a: unknown[]) => {
      logged.push(a.map((x) => (typeof x === 'string' ? x : '')).join(' '));
      orig(...a);
    };
  }
});

const send = (sessionKey: string, message: string) => s.rpc<{ runId: string; status: string }>('agent', { sessionKey, message });
const history = async (sessionKey: string) => (await s.rpc<{ messages: Array<{ content: string; role: string }> }>('chat.history', { sessionKey, limit: 50 })).messages;

it('a run end that meets a deadlock is made again: the run row says ok, its answer is in the transcript', async () => {
  const done = await deadlockOnce('end_conflict', 'runs', `tg_op = 'UPDATE' and new.status = 'ok' and old.status <> 'ok'`);
  const r = await send('agent:main:end-conflict', '/reply fine');
  expect(await s.rpc('agent.wait', { runId: r.runId })).toMatchObject({ status: 'ok', response: 'fine' });
  const row = await until(async () => {
    const x = await s.rt.store.getRun(r.runId);
    return x?.status === 'ok' && x;
  }, 20_000);
  expect(row.status).toBe('ok');
  expect(await done()).toBeGreaterThanOrEqual(2); // it did fail once
  expect((await history('agent:main:end-conflict')).filter((m) => m.content === 'fine')).toHaveLength(1);
  const evs = await settledEvents(s.rt, { runId: r.runId });
  // A quick run's events go with its end in one statement: all of them are logged once (start, input, deltas, end).
  expect(evs.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  expect([evs[0]!.data, evs[5]!.data].map((d) => JSON.parse(d).phase)).toEqual(['start', 'end']);
  expect(troubles()).toEqual([]); // made again in place: not failed, not dropped and re-driven by the backstop
}, 40_000);

it('a run step whose rows meet a deadlock is made again: the run goes on and answers', async () => {
  const done = await deadlockOnce('step_conflict', 'messages', `new.role = 'assistant' and new.content = 'step one'`);
  const r = await send('agent:main:step-conflict', '/reply step one');
  expect(await s.rpc('agent.wait', { runId: r.runId })).toMatchObject({ status: 'ok', response: 'step one' });
  await until(async () => (await s.rt.store.getRun(r.runId))?.status === 'ok', 20_000);
  expect(await done()).toBeGreaterThanOrEqual(2);
  const rows = (await history('agent:main:step-conflict')).filter((m) => m.content === 'step one');
  expect(rows).toHaveLength(1);
  expect(troubles()).toEqual([]);
}, 40_000);

it('an accepted message whose enqueue meets a deadlock is made again: accepted once, answered', async () => {
  const done = await deadlockOnce('enqueue_conflict', 'runs', `tg_op = 'INSERT'`);
  const r = await send('agent:main:enqueue-conflict', '/reply accepted');
  expect(await s.rpc('agent.wait', { runId: r.runId })).toMatchObject({ status: 'ok', response: 'accepted' });
  expect(await done()).toBeGreaterThanOrEqual(2);
  expect((await history('agent:main:enqueue-conflict')).filter((m) => m.role === 'user')).toHaveLength(1);
  expect(troubles()).toEqual([]);
}, 40_000);

it('a run end owing a webhook (one transaction) that meets a deadlock is made again: its events once, its webhook once', async () => {
  const done = await deadlockOnce('tx_end_conflict', 'runs', `tg_op = 'UPDATE' and new.status = 'ok' and old.status <> 'ok'`);
  const key = 'agent:main:tx-end-conflict';
  const r = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply owed', webhook: { url: 'http://127.0.0.1:9/hook' } });
  expect(await s.rpc('agent.wait', { runId: r.runId })).toMatchObject({ status: 'ok', response: 'owed' });
  await until(async () => (await s.rt.store.getRun(r.runId))?.status === 'ok', 20_000);
  expect(await done()).toBeGreaterThanOrEqual(2);
  const evs = await settledEvents(s.rt, { runId: r.runId });
  expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => i + 1));
  expect(evs.filter((e) => e.stream === 'lifecycle' && JSON.parse(e.data).phase === 'end')).toHaveLength(1);
  expect((await history(key)).filter((m) => m.content === 'owed')).toHaveLength(1);
  const hooks = await sql<{ n: number }>`select count(*)::int as n from webhook_outbox where run_id = ${r.runId}`.execute(s.rt.store.db);
  expect(hooks.rows[0]!.n).toBe(1);
  expect(troubles()).toEqual([]);
}, 40_000);
