// SSE replay on PostgreSQL when the settled horizon dips (server/store/settled.ts): a read of the log cut by a row it
// cannot yet take as settled, though the feed fanned that row out already, must not skip it. Caught in CI: a replay
// from 0 right after a run got nothing (fold-sse.test.ts), with other files' processes committing in their databases.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, startTestServer, type TestServer, until } from '../testing/harness';
import { onPostgresPass } from '../testing/store-under-test';

type EventsAfter = TestServer['rt']['store']['eventsAfter'];
const isEnd = (e: any) => e.stream === 'lifecycle' && (e.data.phase === 'end' || e.data.phase === 'error');

describe.runIf(onPostgresPass())('SSE replay when the settled horizon dips (PostgreSQL)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s?.close());

  /**
   * The next reads of a session's log (a replaying reader's: the feed reads the whole log) answer as a read whose
   * horizon dipped below its rows does: the rows from the `keep`-th on are held back as not settled (`pending`).
   */
  const dipNextReads = (sessionKey: string, keep: number, times: number) => {
    const store = s.rt.store;
    const real = store.eventsAfter.bind(store) as EventsAfter;
    let left = times;
    store.eventsAfter = (async (o) => {
      const r = await real(o);
      if (o.sessionKey !== sessionKey || left <= 0 || r.rows.length <= keep) return r;
      left--;
      return { rows: r.rows.slice(0, keep), pending: true, cut: r.rows[keep]!.cursor };
    }) as EventsAfter;
    return () => {
      store.eventsAfter = real;
    };
  };

  it.each([
    ['the whole page held back', 0],
    ['the page cut after its third row', 3],
  ])('a replay from before an ended run gets all of it, in order, once: %s', async (_, keep) => {
    const key = `agent:main:dip-${keep}`;
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply one two three four five' });
    await s.rpc('agent.wait', { runId });
    await s.rt.store.foldsSettled();
    const url = `${s.url}/api/gateway/events?sessionKey=${key}`;
    const all = await readSse(url, { lastEventId: 0, until: (evs) => evs.some(isEnd) });
    expect(all.filter((e) => e.stream === 'assistant').length).toBe(5);
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));

    // The feed fanned the run out (the bus's head is past it); two reads in a row dip.
    const undo = dipNextReads(key, keep, 2);
    try {
      const again = await readSse(url, { lastEventId: 0, until: (evs) => evs.some(isEnd), timeoutMs: 5000 });
      expect(again.map((e) => JSON.stringify(e))).toEqual(all.map((e) => JSON.stringify(e)));
    } finally {
      undo();
    }
  });

  it('a replay behind an open transaction (not a dip) goes live at once instead of reading the log again and again, and gets the rows it held back once they settle', async () => {
    const key = 'agent:main:dip-open-tx';
    const url = `${s.url}/api/gateway/events?sessionKey=${key}`;
    const first = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply before' });
    await s.rpc('agent.wait', { runId: first.runId });
    // A transaction of this database holds the horizon (an xid, left open): the next run's rows commit past it.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let xid: bigint | undefined;
    const open = s.rt.store.db.transaction().execute(async (tx) => {
      xid = BigInt((await sql<{ x: string }>`select pg_current_xact_id()::text as x`.execute(tx)).rows[0]!.x);
      await held;
    });
    try {
      await until(() => xid !== undefined);
      // The feed, with no reader, moves the bus's head to the horizon just below that transaction.
      await until(() => s.rt.bus.head.tx !== undefined && s.rt.bus.head.tx >= xid! - 1n);
      const second = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply after' });
      await s.rpc('agent.wait', { runId: second.runId });
      const store = s.rt.store;
      const real = store.eventsAfter.bind(store) as EventsAfter;
      let reads = 0;
      store.eventsAfter = ((o) => {
        if (o.sessionKey === key) reads++;
        return real(o);
      }) as EventsAfter;
      try {
        const ends = (evs: any[]) => evs.filter(isEnd).length;
        const reading = readSse(url, { lastEventId: 0, until: (evs) => ends(evs) === 2, timeoutMs: 15_000 });
        await new Promise((r) => setTimeout(r, 1000));
        // The first run read, the second held back by the open transaction: the reader waits live, it does not poll.
        expect(reads).toBeLessThan(10);
        release();
        const evs = await reading;
        expect(evs.map((e) => e.runId)).toEqual([...evs.filter((e) => e.runId === first.runId), ...evs.filter((e) => e.runId === second.runId)].map((e) => e.runId));
        for (const id of [first.runId, second.runId]) {
          const seqs = evs.filter((e) => e.runId === id).map((e) => e.seq);
          expect(seqs).toEqual(seqs.map((_, i) => i + 1));
          expect(seqs.length).toBeGreaterThan(3);
        }
      } finally {
        store.eventsAfter = real;
      }
    } finally {
      release();
      await open;
    }
  });

  it('a reader that comes while the idle feed reads the horizon gets the rows committed meanwhile: the feed does not jump past them', async () => {
    const key = 'agent:main:idle-feed';
    const store = s.rt.store;
    const real = store.settledHorizon.bind(store);
    let entered = false;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    store.settledHorizon = async () => {
      entered = true;
      await gate;
      return real();
    };
    try {
      // No reader: a commit wakes the feed, idle, which reads the horizon (held here).
      const wake = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:idle-feed-wake', message: '/reply wake' });
      await s.rpc('agent.wait', { runId: wake.runId });
      await until(() => entered);
      // A reader replays the session (nothing there yet) and goes live at the feed's position.
      const reading = readSse(`${s.url}/api/gateway/events?sessionKey=${key}`, { lastEventId: 0, until: (evs) => evs.some(isEnd), timeoutMs: 10_000 });
      await until(() => s.rt.bus.subscriberCount > 0);
      await new Promise((r) => setTimeout(r, 200));
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply meanwhile' });
      await s.rpc('agent.wait', { runId });
      // The horizon is read now, past that run: jumping there, the feed never fanned it out to the reader.
      release();
      const seqs = (await reading).filter((e) => e.runId === runId).map((e) => e.seq);
      expect(seqs.length).toBeGreaterThan(3);
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    } finally {
      release();
      store.settledHorizon = real;
    }
  });
});
