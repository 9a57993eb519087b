// The event log across a lost PostgreSQL connection (issue 20): a batch cut off is written again, in order, once, so
// the log and every SSE client see each run's seqs 1..N with no gap and no duplicate (CONTRACT §3).
import pg from 'pg';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgConnectConfig } from '../store/db';
import { readSse, settledEvents, startTestServer, type TestServer, until } from '../testing/harness';
import { onPostgresPass } from '../testing/store-under-test';
import type { PendingEvent } from './types';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const isEnd = (e: { stream: string; data: { phase?: string } }) => e.stream === 'lifecycle' && e.data.phase === 'end';
const seqs = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

type Insert = TestServer['rt']['store']['insertEvents'];

describe('event log writes', () => {
  const pgPass = onPostgresPass();
  // Every connection of this server's pool (and its feed) carries this name, so the test can end them and no other.
  const app = `ct_evretry_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const schema = `t_evretry_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const appBefore = process.env.PGAPPNAME;
  let s: TestServer;
  let admin: pg.Client | undefined;
  beforeAll(async () => {
    if (pgPass) process.env.PGAPPNAME = app;
    s = await startTestServer(pgPass ? { databaseUrl: PG_URL, pgSchema: schema } : {});
    if (pgPass) {
      admin = new pg.Client({ ...pgConnectConfig(PG_URL), application_name: `${app}_admin`, options: `-c search_path=${schema}` });
      await admin.connect();
    }
  });
  afterAll(async () => {
    if (pgPass) await sql.raw(`drop schema if exists ${schema} cascade`).execute(s.rt.store.db).catch(() => undefined);
    await admin?.end();
    await s?.close();
    if (appBefore === undefined) delete process.env.PGAPPNAME;
    else process.env.PGAPPNAME = appBefore;
  });

  /** Swaps the store's event write for the test's; undone by the returned function. */
  const patchInsert = (fn: (real: Insert, events: PendingEvent[], o: Parameters<Insert>[1]) => ReturnType<Insert>) => {
    const store = s.rt.store;
    const real = store.insertEvents.bind(store) as Insert;
    store.insertEvents = ((events, o) => fn(real, events, o)) as Insert;
    return () => {
      store.insertEvents = real;
    };
  };

  it.skipIf(!pgPass)('every connection of the process cut while a run streams: its log, a live SSE client and a replay from 0 have seqs 1..N once', async () => {
    const { bus } = s.rt;
    const run = 'r_cut';
    const url = `${s.url}/api/gateway/events?runId=${run}`;
    const subs = bus.subscriberCount;
    const live = readSse(url, { until: (evs) => evs.some(isEnd), timeoutMs: 60_000 });
    await until(() => bus.subscriberCount > subs);
    bus.registerRun(run, 'agent:main:cut', 0);
    const emit = (n: number) => {
      for (let i = 0; i < n; i++) bus.emit(run, 'assistant', { delta: `d${bus.currentSeq(run) + 1} ` });
    };
    emit(5);
    await bus.drain();
    // The next batch's insert waits behind this lock; then the server ends every connection of the process (as a
    // PostgreSQL restart does) with that insert in flight.
    const locker = new pg.Client({ ...pgConnectConfig(PG_URL), application_name: `${app}_locker`, options: `-c search_path=${schema}` });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table events in share mode');
      emit(5);
      const waiting = `select 1 from pg_locks l join pg_stat_activity a using (pid) where a.application_name = $1 and not l.granted`;
      await until(async () => (await admin!.query(waiting, [app])).rowCount, 20_000);
      const cut = await admin!.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [app]);
      expect(cut.rowCount).toBeGreaterThan(0);
    } finally {
      await locker.query('rollback').catch(() => undefined);
      await locker.end();
    }
    // The run goes on in the same process: later events wait behind the cut-off batch.
    emit(4);
    bus.emit(run, 'lifecycle', { phase: 'end' });
    await bus.drain();
    const logged = await settledEvents(s.rt, { runId: run });
    expect(logged.map((r) => r.seq)).toEqual(seqs(15));
    const streamed = await live;
    expect(streamed.map((e) => e.seq)).toEqual(seqs(15));
    const replay = await readSse(url, { lastEventId: 0, until: (evs) => evs.some(isEnd), timeoutMs: 20_000 });
    expect(replay.map((e) => e.seq)).toEqual(seqs(15));
    expect(replay.map((e) => e.id)).toEqual(logged.map((r) => r.id));
  }, 90_000);

  it.skipIf(!pgPass)('a batch whose COMMIT went through but whose reply was lost is written again without duplicating a row', async () => {
    const { bus } = s.rt;
    const run = 'r_lost_reply';
    bus.registerRun(run, 'agent:main:lost-reply', 0);
    const heard: number[] = [];
    const off = bus.onEvent((e) => e.runId === run && heard.push(e.seq));
    let cut = false;
    const undo = patchInsert(async (real, events, o) => {
      if (events.some((e) => e.runId === run && e.seq === 4) && !cut) {
        cut = true;
        await real(events, { notify: o?.notify }); // committed; then the connection drops before the reply
        throw new Error('Connection terminated unexpectedly');
      }
      return real(events, o);
    });
    try {
      for (let i = 1; i <= 3; i++) bus.emit(run, 'assistant', { delta: `a${i}` });
      await bus.drain();
      for (let i = 4; i <= 6; i++) bus.emit(run, 'assistant', { delta: `a${i}` });
      await bus.drain();
      bus.emit(run, 'lifecycle', { phase: 'end' });
      await bus.drain();
    } finally {
      undo();
      off();
    }
    expect(cut).toBe(true);
    const logged = await settledEvents(s.rt, { runId: run });
    expect(logged.map((r) => r.seq)).toEqual(seqs(7));
    expect(heard).toEqual(seqs(7)); // in-process listeners hear the batch once, with the ids of its committed rows
    const replay = await readSse(`${s.url}/api/gateway/events?runId=${run}`, { lastEventId: 0, until: (evs) => evs.some(isEnd), timeoutMs: 20_000 });
    expect(replay.map((e) => e.seq)).toEqual(seqs(7));
  });

  it.skipIf(!pgPass)('a run registered anew while a batch of it is tried again continues after that batch (no seq written twice)', async () => {
    const { bus } = s.rt;
    const run = 'r_reregistered';
    const key = 'agent:main:reregistered';
    bus.registerRun(run, key, 0);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let cut = false;
    let retried = false;
    const undo = patchInsert(async (real, events, o) => {
      if (!cut && events.some((e) => e.runId === run && e.seq === 1)) {
        cut = true;
        throw new Error('Connection terminated unexpectedly');
      }
      if (o?.again && !retried) {
        retried = true;
        await gate;
      }
      return real(events, o);
    });
    try {
      bus.emit(run, 'assistant', { delta: 'first' });
      bus.emit(run, 'assistant', { delta: 'second' });
      const drained = bus.drain();
      await until(() => retried);
      // Meanwhile the run is let go and driven again here, from what the log holds (nothing of it yet).
      bus.unregisterRun(run);
      bus.registerRun(run, key, await s.rt.store.maxSeq(run));
      bus.emit(run, 'lifecycle', { phase: 'end' });
      release();
      await drained;
      await bus.drain();
    } finally {
      undo();
    }
    const logged = await settledEvents(s.rt, { runId: run });
    expect(logged.map((r) => r.seq)).toEqual(seqs(3));
  });

  it.skipIf(!pgPass)('a run re-driven under a newer lease while its old batch is tried again continues from the log, not after the batch the fence drops (seed 201: 3 then 6)', async () => {
    // The 200-fault run's gap: PostgreSQL restarted mid-run, the run's batch (seqs 4, 5, under the old epoch) was
    // tried again; the process, declared dead, claimed the session again (a new epoch) and re-drove the run, which
    // continued at 6 after the batch; then the batch went through the fence check and was dropped: 1, 2, 3, 6, 7.
    const { bus, store } = s.rt;
    expect(bus.feed).toBeTruthy(); // events carry their epoch on PostgreSQL (the feed fans out)
    const run = 'r_refenced';
    const key = 'agent:main:refenced';
    await store.ensureSession({ key, agentId: 'main', kind: 'main' });
    const epochOf = async () => Number((await admin!.query('select epoch from sessions where key = $1', [key])).rows[0].epoch);
    store.setFence(key, await epochOf());
    // Every write of this run's events fails as a restart's backends do (57P01) while the flag row is there.
    await admin!.query(`create table ct_fail_flag (x int); insert into ct_fail_flag values (1);
      create function ct_fail_events() returns trigger language plpgsql as $f$ begin
        if new.run_id = '${run}' and new.seq > 3 and exists (select 1 from ct_fail_flag) then
          raise exception 'terminating connection due to administrator command' using errcode = '57P01';
        end if;
        return new;
      end $f$;
      create trigger ct_fail_events before insert on events for each row execute function ct_fail_events()`);
    try {
      bus.registerRun(run, key, 0, { leased: true });
      for (let i = 1; i <= 3; i++) bus.emit(run, 'assistant', { delta: `old${i}` });
      await bus.drain();
      bus.emit(run, 'assistant', { delta: 'old4' });
      bus.emit(run, 'assistant', { delta: 'old5' });
      const drained = bus.drain();
      await until(() => (bus as unknown as { retrying: unknown }).retrying);
      // The run is dropped here; the session is claimed again (a new epoch) and the run re-driven from the log.
      bus.unregisterRun(run);
      const next = Number((await admin!.query(`update sessions set epoch = nextval('session_epochs') where key = $1 returning epoch`, [key])).rows[0].epoch);
      store.setFence(key, next);
      bus.registerRun(run, key, await store.maxSeq(run), { leased: true });
      bus.emit(run, 'assistant', { delta: 'new' });
      bus.emit(run, 'lifecycle', { phase: 'end' });
      await admin!.query('delete from ct_fail_flag');
      await drained;
      await bus.drain();
    } finally {
      await admin!.query('drop trigger if exists ct_fail_events on events; drop function if exists ct_fail_events(); drop table if exists ct_fail_flag');
      store.clearFence(key);
    }
    const logged = await settledEvents(s.rt, { runId: run });
    expect(logged.map((r) => r.seq)).toEqual(seqs(5));
    expect(logged.map((r) => (r.data.includes('delta') ? JSON.parse(r.data).delta : 'end'))).toEqual(['old1', 'old2', 'old3', 'new', 'end']);
    const replay = await readSse(`${s.url}/api/gateway/events?runId=${run}`, { lastEventId: 0, until: (evs) => evs.some(isEnd), timeoutMs: 20_000 });
    expect(replay.map((e) => e.seq)).toEqual(seqs(5));
  }, 60_000);

  it.skipIf(!pgPass).each([
    ['40P01', 'deadlock detected'],
    ['40001', 'could not serialize access due to concurrent update'],
  ])('a batch rolled back by a lock conflict (%s %s) is written again, not dropped: seqs 1..N once', async (code, message) => {
    const { bus } = s.rt;
    const run = `r_conflict_${code}`;
    bus.registerRun(run, `agent:main:conflict-${code}`, 0);
    let failed = 0;
    const undo = patchInsert(async (real, events, o) => {
      if (failed < 2 && events.some((e) => e.runId === run && e.seq === 3)) {
        failed++;
        throw Object.assign(new Error(message), { code });
      }
      return real(events, o);
    });
    try {
      for (let i = 1; i <= 2; i++) bus.emit(run, 'assistant', { delta: `a${i}` });
      await bus.drain();
      for (let i = 3; i <= 5; i++) bus.emit(run, 'assistant', { delta: `a${i}` });
      await bus.drain();
      bus.emit(run, 'lifecycle', { phase: 'end' });
      await bus.drain();
    } finally {
      undo();
    }
    expect(failed).toBe(2);
    const logged = await settledEvents(s.rt, { runId: run });
    expect(logged.map((r) => r.seq)).toEqual(seqs(6));
  });

  it('a write that fails for another reason than a lost connection or a lock conflict (a bad row) is not tried again: the batch is dropped, later ones go on', async () => {
    const { bus } = s.rt;
    const run = 'r_bad_row';
    bus.registerRun(run, 'agent:main:bad-row', 0);
    let calls = 0;
    const undo = patchInsert(async (real, events, o) => {
      if (events.some((e) => e.runId === run && e.seq === 1)) {
        calls++;
        throw Object.assign(new Error('invalid input syntax for type json'), { code: '22P02' });
      }
      return real(events, o);
    });
    try {
      bus.emit(run, 'assistant', { delta: 'bad' });
      await bus.drain();
      bus.emit(run, 'lifecycle', { phase: 'end' });
      await bus.drain();
    } finally {
      undo();
    }
    expect(calls).toBe(1);
    const logged = await settledEvents(s.rt, { runId: run });
    expect(logged.map((r) => r.seq)).toEqual([2]);
  });
});
