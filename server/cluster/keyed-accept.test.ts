// `agent` with an idempotency key when the PostgreSQL connection is lost under its accept (issue 20: a restart during
// `enqueueClaimedPg` answered `internal`): the accept is made again and the client gets the run, accepted once.
import crypto from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pgConnectConfig } from '../store/db';
import { startTestServer, type TestServer, until } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const schema = `t_keyed_${crypto.randomBytes(4).toString('hex')}`;
// Every connection of this server's pool carries this name, so the test can end them and no other.
const app = `ct_keyed_${process.pid}_${crypto.randomBytes(3).toString('hex')}`;
const appBefore = process.env.PGAPPNAME;
let s: TestServer;
let admin: pg.Client;

beforeAll(async () => {
  process.env.PGAPPNAME = app;
  s = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config: { agents: [{ id: 'main' }] } });
  admin = new pg.Client({ ...pgConnectConfig(PG_URL), application_name: `${app}_admin`, options: `-c search_path=${schema}` });
  await admin.connect();
});
afterAll(async () => {
  if (s) await sql.raw(`drop schema if exists ${schema} cascade`).execute(s.rt.store.db).catch(() => undefined);
  await admin?.end();
  await s?.close();
  if (appBefore === undefined) delete process.env.PGAPPNAME;
  else process.env.PGAPPNAME = appBefore;
});

type Accepted = { runId: string; status: string };
const history = async (sessionKey: string) => (await s.rpc<{ messages: Array<{ content: string; role: string }> }>('chat.history', { sessionKey, limit: 50 })).messages;

it('the connection of a keyed accept terminated mid-transaction (pg_terminate_backend): accepted on a retry, once, and answered', async () => {
  const key = 'agent:main:keyed-cut';
  const idempotencyKey = `k_${crypto.randomBytes(4).toString('hex')}`;
  // The accept's transaction claims the key, then waits here for the run's insert; the server then ends it.
  const locker = new pg.Client({ ...pgConnectConfig(PG_URL), application_name: `${app}_locker`, options: `-c search_path=${schema}` });
  await locker.connect();
  let reply: Promise<{ body: { result?: Accepted; error?: unknown } }>;
  try {
    await locker.query('begin');
    await locker.query('lock table runs in share mode');
    reply = s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'agent', params: { sessionKey: key, message: '/reply kept', idempotencyKey } });
    const waiting = `select distinct l.pid from pg_locks l join pg_stat_activity a using (pid) where a.application_name = $1 and not l.granted`;
    const pids = await until(async () => {
      const r = await admin.query<{ pid: number }>(waiting, [app]);
      return r.rows.length > 0 && r.rows;
    }, 20_000);
    const claimed = await admin.query(`select 1 from pg_locks l where l.pid = $1 and l.relation = 'idempotency'::regclass`, [pids[0]!.pid]);
    expect(claimed.rowCount).toBeGreaterThan(0); // cut inside the transaction, after its claim
    await admin.query('select pg_terminate_backend(pid) from unnest($1::int[]) pid', [pids.map((p) => p.pid)]);
  } finally {
    await locker.query('rollback').catch(() => undefined);
    await locker.end();
  }
  const { body } = await reply!;
  expect(body.error).toBeUndefined();
  const first = body.result!;
  expect(first).toMatchObject({ runId: expect.any(String), status: 'started' });
  expect(await s.rpc('agent.wait', { runId: first.runId })).toMatchObject({ status: 'ok', response: 'kept' });
  // A repeat gets the same answer; one user row, one answer.
  expect(await s.rpc<Accepted>('agent', { sessionKey: key, message: '/reply kept', idempotencyKey })).toEqual(first);
  const h = await history(key);
  expect(h.filter((m) => m.role === 'user')).toHaveLength(1);
  expect(h.filter((m) => m.content === 'kept')).toHaveLength(1);
}, 60_000);

it('a keyed accept whose transaction committed but whose reply was lost: the retry answers from the claim; the run is driven once', async () => {
  const cluster = s.rt.cluster!;
  const real = cluster.enqueue.bind(cluster);
  let cut = 0;
  cluster.enqueue = (async (...a: Parameters<typeof real>) => {
    const r = await real(...a);
    if (!cut++) throw new Error('Connection terminated unexpectedly'); // committed; the reply lost
    return r;
  }) as typeof real;
  const key = 'agent:main:keyed-reply-lost';
  const idempotencyKey = `k_${crypto.randomBytes(4).toString('hex')}`;
  let first: Accepted;
  try {
    first = await s.rpc<Accepted>('agent', { sessionKey: key, message: '/reply once', idempotencyKey });
  } finally {
    cluster.enqueue = real;
  }
  expect(cut).toBe(1);
  expect(first).toMatchObject({ runId: expect.any(String), status: 'started' });
  // Not driven by the cut-off attempt: the orphan sweep's backstop takes the session in and ends the run.
  await until(async () => (await s.rt.store.getRun(first.runId))?.status === 'ok', 30_000);
  expect(await s.rpc<Accepted>('agent', { sessionKey: key, message: '/reply once', idempotencyKey })).toEqual(first);
  const h = await history(key);
  expect(h.filter((m) => m.role === 'user')).toHaveLength(1);
  expect(h.filter((m) => m.content === 'once')).toHaveLength(1);
}, 60_000);
