// A run whose whole log is known at its end (its events logged before, EventBus.loggedOf, and the end's) has its text
// deltas folded without reading the log back: on SQLite in the end's own transaction, on PostgreSQL one statement
// per fold after it (Store.foldLater with `folds`); the log replays exactly the events as they were handed out.
import { sql } from 'kysely';
import { describe, expect, it, vi } from 'vitest';
import { START } from '../events/cursor';
import type { PendingEvent, TranscriptMessage } from '../events/types';
import { Store } from './store';
import { DIALECTS, withSuiteStore } from '../testing/store-dialects';

const eventRows = async (store: Store, runId: string) => Number((await sql<{ n: number }>`select count(*) as n from events where run_id = ${runId}`.execute(store.db)).rows[0]!.n);

describe.each(DIALECTS)('a run folded at its end on %s', (name) => {
  let store!: Store;
  withSuiteStore(name, 'foldend', (s) => (store = s));

  /**
   * A run: start and 2 deltas flushed before its end (as the bus does), then 2 more deltas, its message and its end
   * written with its end; `whole`: pass the events logged before (else the end does not know its whole log).
   */
  async function runWithEnd(runId: string, whole: boolean) {
    const key = `agent:main:${runId}`;
    await store.ensureSession({ key, agentId: 'main', kind: 'main' });
    const ts = new Date().toISOString();
    await store.insertRun({ id: runId, session_key: key, status: 'queued', input: '[]', queue_mode: 'followup', response: null, error: null, created_at: ts, started_at: null, ended_at: null, origin: null, webhook: null, last_seq: 0, merged_into: null, cancel_requested: null });
    await store.startRun(runId, key, [{ sessionKey: key, role: 'user', kind: 'message', content: 'hi', runId, author: { type: 'user', id: 'user' } }]);
    const ev = (seq: number, stream: PendingEvent['stream'], data: Record<string, unknown>): PendingEvent => ({ runId, seq, stream, ts: new Date(Date.parse(ts) + seq).toISOString(), sessionKey: key, data });
    const flushed = [ev(1, 'lifecycle', { phase: 'start' }), ev(2, 'assistant', { delta: 'He' }), ev(3, 'assistant', { delta: 'llo' })];
    const ids = (await store.insertEvents(flushed)) as Array<{ id: number; tx?: string }>;
    const logged: Array<{ ev: PendingEvent; id: number }> = flushed.map((e, i) => ({ ev: e, id: ids[i]!.id }));
    const transaction = vi.spyOn(store.db, 'transaction');
    const end = await store.finishRun(
      runId,
      { status: 'ok', response: 'Hello you', ended_at: ts, last_seq: 7 },
      [],
      [],
      { key, idle: true },
      {
        messages: [{ sessionKey: key, role: 'assistant', kind: 'message', content: 'Hello you', runId, author: { type: 'agent', id: 'main' } }],
        events: (rows: TranscriptMessage[]) => [ev(4, 'assistant', { delta: ' yo' }), ev(5, 'assistant', { delta: 'u' }), ev(6, 'message', { message: rows[0] }), ev(7, 'lifecycle', { phase: 'end' })],
        logged: (events, eids) => events.forEach((e, i) => logged.push({ ev: e, id: eids[i]!.id })),
        before: whole ? { events: flushed, ids } : null,
      },
    );
    const calledTx = transaction.mock.calls.length;
    transaction.mockRestore();
    return { end, logged, calledTx };
  }

  /** The run's events as a reader of the log gets them: id, seq, stream and data. */
  const replayed = async (runId: string) => {
    // PostgreSQL hands out rows below the horizon only: another suite's open transaction may hold it a moment.
    for (;;) {
      const { rows, pending } = await store.eventsAfter({ after: START, runId, limit: 100 });
      if (!pending) return rows.map((r) => ({ id: r.id, seq: r.seq, stream: r.stream, ts: r.ts, data: JSON.parse(r.data) as unknown }));
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const handedOut = (logged: Array<{ ev: PendingEvent; id: number }>) => logged.map(({ ev, id }) => ({ id, seq: ev.seq, stream: ev.stream, ts: ev.ts, data: JSON.parse(JSON.stringify(ev.data)) as unknown }));

  it('folds the deltas of a run whose whole log is known without reading it back, and replays the same events', async () => {
    const { end, logged, calledTx } = await runWithEnd('run_foldend', true);
    expect(calledTx).toBe(0);
    const unfolded = handedOut(logged);
    if (name === 'sqlite') {
      // In the end's transaction: 4 deltas (seq 2–5) are one row already; nothing is left to fold later.
      expect(await eventRows(store, 'run_foldend')).toBe(4);
      expect(end.folds).toEqual([]);
    } else {
      expect(await eventRows(store, 'run_foldend')).toBe(7);
      expect(end.folds).toHaveLength(1);
      const tx = vi.spyOn(store.db, 'transaction');
      store.foldLater('run_foldend', (e) => {
        throw e;
      }, end.folds);
      await store.foldsSettled();
      expect(tx).not.toHaveBeenCalled(); // one statement, not the read-back fold's transaction
      tx.mockRestore();
      expect(await eventRows(store, 'run_foldend')).toBe(4);
    }
    expect(await replayed('run_foldend')).toEqual(unfolded);
    // Folding it again (the read-back fold) changes nothing.
    expect(await store.foldRun('run_foldend')).toBe(0);
    expect(await eventRows(store, 'run_foldend')).toBe(4);
  });

  it('leaves a run whose earlier events are not known to the read-back fold', async () => {
    const { end, logged } = await runWithEnd('run_foldlate', false);
    expect(end.folds).toBeUndefined();
    expect(await eventRows(store, 'run_foldlate')).toBe(7);
    store.foldLater('run_foldlate', (e) => {
      throw e;
    }, end.folds);
    await store.foldsSettled();
    expect(await eventRows(store, 'run_foldlate')).toBe(4);
    expect(await replayed('run_foldlate')).toEqual(handedOut(logged));
  });
});
