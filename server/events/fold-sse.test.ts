// SSE replay across an ended run whose text deltas were folded (issue 24 item 7), on both stores: reconnecting with
// any Last-Event-ID (before the run, between two folded deltas, after them) gives exactly what the live stream gave.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, startTestServer, type TestServer, until } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const isEnd = (e: any) => e.stream === 'lifecycle' && (e.data.phase === 'end' || e.data.phase === 'error');

describe.each([['sqlite'], ['postgres']])('SSE replay over folded deltas on %s', (name) => {
  let s: TestServer;
  const schema = `t_foldsse_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  beforeAll(async () => {
    s = await startTestServer(name === 'postgres' ? { databaseUrl: PG_URL, pgSchema: schema } : {});
  });
  afterAll(async () => {
    if (name === 'postgres') await sql.raw(`drop schema if exists ${schema} cascade`).execute(s.rt.store.db);
    await s?.close();
  });

  it('replays a folded run from every Last-Event-ID exactly as it was streamed live', async () => {
    const key = 'agent:main:fold-sse';
    const url = `${s.url}/api/gateway/events?sessionKey=${key}`;
    // A run before, so a Last-Event-ID before the folded run exists.
    const warmId = (await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply warm up' })).runId;
    await s.rpc('agent.wait', { runId: warmId });
    await s.rt.store.foldsSettled();
    const subs = s.rt.bus.subscriberCount;
    // (On PostgreSQL the feed may fan the warm-up's last events out after this subscribes: they are left out.)
    const live = readSse(url, { until: (evs) => evs.some((e) => isEnd(e) && e.runId !== warmId) });
    await until(() => s.rt.bus.subscriberCount > subs); // subscribed: the live stream has the whole run
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply one two three four five six seven eight nine ten' });
    const streamed = (await live).filter((e) => e.runId === runId);
    await s.rpc('agent.wait', { runId });
    await s.rt.store.foldsSettled();
    expect(streamed.filter((e) => e.stream === 'assistant').length).toBe(10);
    // Folded: the ten deltas are one stored row.
    const stored = await sql<{ n: number }>`select count(*) as n from events where run_id = ${runId}`.execute(s.rt.store.db);
    expect(Number(stored.rows[0]!.n)).toBe(streamed.length - 9);

    const frames = (evs: any[]) => evs.map((e) => JSON.stringify(e));
    const toEnd = (evs: any[]) => evs.some((e) => e.runId === runId && isEnd(e));
    // From before the run (the warm-up's end), and from every event of it but the last.
    const warm = await readSse(url, { lastEventId: 0, until: (evs) => evs.some(isEnd) });
    expect(frames(await readSse(url, { lastEventId: warm.at(-1)._sseId, until: toEnd }))).toEqual(frames(streamed));
    for (let i = 0; i < streamed.length - 1; i++) {
      expect(frames(await readSse(url, { lastEventId: streamed[i]._sseId, until: toEnd })), `after event ${i + 1}`).toEqual(frames(streamed.slice(i + 1)));
    }
    // By run too, from between two folded deltas.
    const d = streamed.findIndex((e) => e.stream === 'assistant') + 3;
    expect(frames(await readSse(`${s.url}/api/gateway/events?runId=${runId}`, { lastEventId: streamed[d]._sseId, until: toEnd }))).toEqual(frames(streamed.slice(d + 1)));
  });
});
