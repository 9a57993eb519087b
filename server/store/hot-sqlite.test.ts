// A turn's store calls on SQLite go through the prepared statements (./hot-sqlite), not Kysely's builder, and write what the Kysely path wrote.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase } from './db';
import { ClaimTaken } from './idempotency';
import { Store } from './store';
import { tmpDataDir } from '../testing/harness';

describe('a turn on SQLite', () => {
  let store: Store;
  beforeAll(async () => {
    store = new Store(await openDatabase({ dataDir: tmpDataDir() }));
  });
  afterAll(() => store.close());

  it('runs no query built by Kysely: session, run insert with its claim, start, append, end with its events', async () => {
    const built = (['selectFrom', 'insertInto', 'updateTable', 'transaction'] as const).map((m) => vi.spyOn(store.db, m));
    const key = 'agent:main:hot';
    const session = await store.ensureSession({ key, agentId: 'main', kind: 'main' });
    expect(session).toMatchObject({ key, message_count: 0, status: 'idle' });
    const ts = new Date().toISOString();
    const row = { id: 'run_hot', session_key: key, status: 'queued', input: '[]', queue_mode: 'followup', response: null, error: null, created_at: ts, started_at: null, ended_at: null, origin: null, webhook: null, last_seq: 0, merged_into: null, cancel_requested: null };
    await store.insertRun(row, { key: 'agent:hot-claim', owner: 'me', runId: 'run_hot', result: { runId: 'run_hot' }, settled: true });
    await expect(store.insertRun({ ...row, id: 'run_hot_2' }, { key: 'agent:hot-claim', owner: 'me', settled: true })).rejects.toBeInstanceOf(ClaimTaken);
    expect(await store.getRun('run_hot_2')).toBeUndefined();

    const author = { type: 'user' as const, id: 'user' };
    const started = await store.startRun('run_hot', key, [{ sessionKey: key, role: 'user', kind: 'message', content: 'hello', runId: 'run_hot', author }]);
    expect(started!.session).toMatchObject({ status: 'running', message_count: 1, bytes: 5 });
    expect(await store.startRun('run_hot', key, [])).toBeNull(); // no longer queued
    store.deferUsage({ run_id: 'run_hot', session_key: key, agent_id: 'main', model: 'scripted', kind: 'step', input_tokens: 3, output_tokens: 2, cached_tokens: 0, cost_usd: 0, priced: 0, created_at: ts, root_run_id: 'run_hot' });
    const tool = await store.appendMessages([{ sessionKey: key, role: 'assistant', kind: 'tool_call', content: '', runId: 'run_hot', author: { type: 'agent', id: 'main' }, tool: { name: 'exec', callId: 'c1', args: { command: 'ls' } } }]);
    expect(tool[0]!.id).toBeGreaterThan(started!.rows[0]!.id);
    const logged: number[] = [];
    const end = await store.finishRun(
      'run_hot',
      { status: 'ok', response: 'hi', ended_at: ts, last_seq: 2 },
      [],
      [],
      { key, idle: true },
      {
        messages: [{ sessionKey: key, role: 'assistant', kind: 'message', content: 'hi', runId: 'run_hot', author: { type: 'agent', id: 'main' } }],
        events: (rows) => [
          { runId: 'run_hot', seq: 1, stream: 'message', ts, sessionKey: key, data: { message: rows[0] } },
          { runId: 'run_hot', seq: 2, stream: 'lifecycle', ts, sessionKey: key, data: { phase: 'end' } },
        ],
        logged: (_, ids) => logged.push(...ids.map((x) => x.id)),
      },
    );
    for (const spy of built) expect(spy).not.toHaveBeenCalled();
    built.forEach((s) => s.mockRestore());

    expect(end.ids.map((x) => x.id)).toEqual(logged);
    expect(logged[1]).toBe(logged[0]! + 1);
    expect((end.events[0]!.data.message as { id: number }).id).toBeGreaterThan(tool[0]!.id);
    expect(await store.getRun('run_hot')).toMatchObject({ status: 'ok', response: 'hi', last_seq: 2 });
    expect(await store.getSession(key)).toMatchObject({ status: 'idle', message_count: 3, bytes: 5 + 2 + JSON.stringify({ command: 'ls' }).length });
    const usage = await store.db.selectFrom('model_usage').selectAll().where('run_id', '=', 'run_hot').execute();
    expect(usage.map((u) => u.input_tokens)).toEqual([3]);
    const { rows } = await store.eventsAfter({ after: { id: 0 }, runId: 'run_hot', limit: 10 });
    expect(rows.map((r) => r.id)).toEqual(logged);
    expect((await store.contextRows(key, 10)).map((m) => m.content)).toEqual(['hello', '', 'hi']);
  });
});

/** Commits in the WAL so far: frames whose header carries the database size after a commit (non-zero). */
function walCommits(dataDir: string): number {
  const wal = fs.readFileSync(path.join(dataDir, 'crosstalk.sqlite-wal'));
  if (wal.length < 32) return 0;
  const size = wal.readUInt32BE(8);
  let n = 0;
  for (let off = 32; off + 24 + size <= wal.length; off += 24 + size) if (wal.readUInt32BE(off + 4) !== 0) n++;
  return n;
}

describe('group commit on SQLite', () => {
  let store: Store;
  const dataDir = tmpDataDir();
  const ts = new Date().toISOString();
  const run = (id: string, key: string) => ({ id, session_key: key, status: 'queued', input: '[]', queue_mode: 'followup', response: null, error: null, created_at: ts, started_at: null, ended_at: null, origin: null, webhook: null, last_seq: 0, merged_into: null, cancel_requested: null });
  beforeAll(async () => {
    store = new Store(await openDatabase({ dataDir }));
    await store.ensureSession({ key: 'agent:main:group', agentId: 'main', kind: 'main' });
  });
  afterAll(() => store.close());

  it('writes queued behind the connection are committed together: 20 at once, one commit (a few on a busy machine)', async () => {
    const before = walCommits(dataDir);
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.insertRun(run(`run_group_${i}`, 'agent:main:group'))));
    // One group, unless the thread lost the CPU past the group's 4 ms budget (the rest then commit in the next): one
    // commit each before.
    expect(walCommits(dataDir) - before).toBeLessThan(10);
    for (let i = 0; i < 20; i++) expect(await store.getRun(`run_group_${i}`)).toMatchObject({ status: 'queued' });
  });

  it('a write of the group that fails is rolled back alone and rejects alone; the others are written', async () => {
    const results = await Promise.allSettled([
      store.insertRun(run('run_solo_a', 'agent:main:group')),
      store.insertRun(run('run_group_3', 'agent:main:group')), // its id is taken: the primary key refuses it
      store.insertRun(run('run_solo_b', 'agent:main:group')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).toMatch(/UNIQUE constraint failed: runs\.id/);
    expect(await store.getRun('run_solo_a')).toBeDefined();
    expect(await store.getRun('run_solo_b')).toBeDefined();
  });
});
