// The store's fencing on the store under test (SQLite, or PostgreSQL with TEST_STORE=postgres): epochs that never
// repeat, a tool call's start as a claim (fenced by the lease on PostgreSQL), a run's own writes refused under a
// lost lease, and an approval asked twice for one call (a zombie and a re-driver) stored once.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness';
import { FencedError } from './store';
import { onPostgresPass } from '../testing/store-under-test';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

const turn = async (key: string, message: string) => {
  const r = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message });
  expect(await s.rpc('agent.wait', { runId: r.runId })).toMatchObject({ status: 'ok' });
  return r.runId;
};

describe('fencing in the store', () => {
  it('a session deleted and created again under the same key never gets an epoch it had before', async () => {
    const key = 'agent:main:epochs';
    await turn(key, 'one');
    const first = Number((await s.rt.store.getSession(key))!.epoch);
    await s.rpc('sessions.delete', { sessionKey: key });
    await turn(key, 'two');
    const second = Number((await s.rt.store.getSession(key))!.epoch);
    expect(second).toBeGreaterThan(first);
    // Another session takes yet another one.
    await turn('agent:main:epochs-other', 'three');
    expect(Number((await s.rt.store.getSession('agent:main:epochs-other'))!.epoch)).toBeGreaterThan(second);
  });

  it('a tool call’s start is a claim: the first caller wins, a second (a re-drive, a zombie) does not', async () => {
    const key = 'agent:main:claims';
    const runId = await turn(key, 'hi');
    // A run claims under its session's lease (PostgreSQL: the fence its process holds while it drives the run).
    if (onPostgresPass()) s.rt.store.setFence(key, Number((await s.rt.store.getSession(key))!.epoch));
    try {
      expect(await s.rt.store.markToolStarted(runId, 'call_1', key)).toBe(true);
      expect(await s.rt.store.markToolStarted(runId, 'call_1', key)).toBe(false);
      expect(await s.rt.store.markToolStarted(runId, 'call_2', key)).toBe(true);
    } finally {
      s.rt.store.clearFence(key);
    }
  });

  it('an approval asked twice for one tool call is one row: the second asker gets the first one’s', async () => {
    const row = (id: string) => ({ id, session_key: 'agent:main:apr', run_id: 'run_apr', call_id: 'c1', tool: 'exec', args: '{}', status: 'pending', decision: null, reason: null, requested_at: new Date().toISOString(), resolved_at: null });
    expect(await s.rt.store.insertApproval(row('apr_first'))).toMatchObject({ inserted: true, row: { id: 'apr_first' } });
    expect(await s.rt.store.insertApproval(row('apr_second'))).toMatchObject({ inserted: false, row: { id: 'apr_first' } });
    expect((await s.rt.store.pendingApprovals({ runId: 'run_apr' })).map((a) => a.id)).toEqual(['apr_first']);
  });

  it.skipIf(!onPostgresPass())('PostgreSQL: under a lost lease a run’s writes are refused (FencedError) and change nothing', async () => {
    const { store } = s.rt;
    const key = 'agent:main:lost-lease';
    const runId = await turn(key, 'hi');
    const epoch = Number((await store.getSession(key))!.epoch);
    store.setFence(key, epoch);
    try {
      await store.updateRunFenced(runId, key, { response: 'held' });
      expect((await store.getRun(runId))!.response).toBe('held');
      // Another process takes the session over: a new epoch.
      await sql`update sessions set epoch = nextval('session_epochs') where key = ${key}`.execute(store.db);
      await expect(store.updateRunFenced(runId, key, { response: 'late' })).rejects.toBeInstanceOf(FencedError);
      await expect(store.markToolStarted(runId, 'call_late', key)).rejects.toBeInstanceOf(FencedError);
      expect(await store.holdsLease(key)).toBe(false);
      expect((await store.getRun(runId))!.response).toBe('held');
      expect(await store.toolStarted(runId, 'call_late')).toBe(false);
    } finally {
      store.clearFence(key);
    }
  });

  it.skipIf(!onPostgresPass())('PostgreSQL, clustered: with no fence for the session here (its state dropped) a run’s writes are refused, writes from outside a run are not', async () => {
    const { store } = s.rt;
    const key = 'agent:main:no-fence';
    const runId = await turn(key, 'hi');
    expect(store.fenceOf(key)).toBeUndefined(); // released idle: no fence here
    const before = await store.getSession(key);
    const row = { sessionKey: key, role: 'assistant' as const, kind: 'message' as const, content: 'zombie', runId, author: { type: 'agent' as const, id: 'main' } };
    await expect(store.updateRunFenced(runId, key, { response: 'late' })).rejects.toBeInstanceOf(FencedError);
    await expect(store.markToolStarted(runId, 'call_late', key)).rejects.toBeInstanceOf(FencedError);
    await expect(store.appendMessages([row], { run: true })).rejects.toBeInstanceOf(FencedError);
    await expect(store.startRun(runId, key, [row])).rejects.toBeInstanceOf(FencedError);
    expect((await store.getRun(runId))!.response).not.toBe('late');
    expect(await store.toolStarted(runId, 'call_late')).toBe(false);
    expect(Number((await store.getSession(key))!.message_count)).toBe(Number(before!.message_count));
    // A row from outside any run (a mirror, a notice) is no run's write: it lands.
    expect(await store.appendMessages([{ ...row, content: 'a notice', runId: null }])).toHaveLength(1);
  });
});
