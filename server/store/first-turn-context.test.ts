// A new session's first turn: the rows its run's start wrote are its whole transcript, so they are its model context
// without a read back (Store.writtenRows with the session row after the write), on both stores.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { Store } from './store';
import { DIALECTS, withSuiteStore } from '../testing/store-dialects';

describe.each(DIALECTS)('a new session\'s first turn on %s', (name) => {
  let store!: Store;
  withSuiteStore(name, 'firstctx', (s) => (store = s));

  const start = async (key: string, runId: string) => {
    await store.ensureSession({ key, agentId: 'main', kind: 'main' });
    const ts = new Date().toISOString();
    await store.insertRun({ id: runId, session_key: key, status: 'queued', input: '[]', queue_mode: 'followup', response: null, error: null, created_at: ts, started_at: null, ended_at: null, origin: null, webhook: null, last_seq: 0, merged_into: null, cancel_requested: null });
    return (await store.startRun(runId, key, [{ sessionKey: key, role: 'user', kind: 'message', content: `hello ${runId}`, runId, author: { type: 'user', id: 'user' } }]))!;
  };
  // The rows are taken out of the table behind the store's back: what contextRows returns then was not read.
  const hide = (key: string) => sql`delete from messages where session_key = ${key}`.execute(store.db);
  const count = (started: Awaited<ReturnType<typeof start>>) => (name === 'postgres' ? Number(started.session!.message_count) : undefined);

  it('takes its context from the rows its start wrote, not from a read', async () => {
    const started = await start('agent:main:first-ctx', 'run_first_ctx');
    expect(Number(started.session!.message_count)).toBe(1);
    await hide('agent:main:first-ctx');
    expect((await store.contextRows('agent:main:first-ctx', 50, count(started))).map((m) => m.content)).toEqual(['hello run_first_ctx']);
  });

  it('reads a session that had rows before its run started', async () => {
    const key = 'agent:main:second-ctx';
    await store.ensureSession({ key, agentId: 'main', kind: 'main' });
    await store.appendMessages([{ sessionKey: key, role: 'system', kind: 'notice', content: 'earlier', author: { type: 'system', id: 'test' } }]);
    const started = await start(key, 'run_second_ctx');
    expect(Number(started.session!.message_count)).toBe(2);
    expect((await store.contextRows(key, 50, count(started))).map((m) => m.content)).toEqual(['earlier', 'hello run_second_ctx']);
  });
});
