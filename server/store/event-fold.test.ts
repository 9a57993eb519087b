// Folding an ended run's text deltas (server/store/event-fold.ts) on both stores: every replay of the log — from before,
// inside and after a folded run, by session, run or the whole log, in pages of any size, a reader concurrent with the
// fold — gives exactly the events, cursors and bytes of the unfolded log.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EventCursor, encodeEventCursor, START } from '../events/cursor';
import type { PendingEvent } from '../events/types';
import { openDatabase } from './db';
import type { LogRow } from './event-fold';
import { Store } from './store';
import { tmpDataDir } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

type Filter = { sessionKey?: string; runId?: string };

/** An event as a client gets it: SSE id, the event's JSON, and the stored data's bytes (tab-separated). */
const lineOf = (r: LogRow) => `${encodeEventCursor(r.cursor)}\t${JSON.stringify({ id: r.id, runId: r.run_id, seq: r.seq, stream: r.stream, ts: r.ts, sessionKey: r.session_key, data: JSON.parse(r.data) })}\t${r.data}`;

/** Every event after `after` through the store's reader, page by page. */
async function replay(store: Store, after: EventCursor, filter: Filter, limit: number): Promise<string[]> {
  const out: string[] = [];
  let at = after;
  for (let spins = 0; spins < 2000; spins++) {
    const { rows, pending } = await store.eventsAfter({ after: at, ...filter, limit });
    for (const r of rows) {
      out.push(lineOf(r));
      at = r.cursor;
    }
    if (!rows.length && !pending) return out;
    if (pending && !rows.length) await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('replay did not settle');
}

const delta = (runId: string, sessionKey: string, seq: number, text: string, ts: string): PendingEvent => ({ runId, seq, stream: 'assistant', ts, sessionKey, data: { delta: text } });
const other = (runId: string, sessionKey: string, seq: number, stream: PendingEvent['stream'], data: Record<string, unknown>, ts: string): PendingEvent => ({ runId, seq, stream, ts, sessionKey, data });

/**
 * Run `ra` in session A: start, 4 deltas, a tool event, 3 deltas, its message, its end — written in several
 * transactions, with events of run `rb` (session B, 2 deltas) between them. Returns every cursor of the log.
 */
async function writeRuns(store: Store, ra: string, rb: string, A: string, B: string): Promise<void> {
  const t = Date.parse('2026-11-26T04:00:00.000Z');
  const at = (ms: number) => new Date(t + ms).toISOString();
  await store.insertEvents([other(ra, A, 1, 'lifecycle', { phase: 'start' }, at(0)), delta(ra, A, 2, 'Hello', at(5)), delta(ra, A, 3, ' wörld "q"\n', at(5))]);
  await store.insertEvents([other(rb, B, 1, 'lifecycle', { phase: 'start' }, at(6)), delta(rb, B, 2, 'b1', at(7))]);
  // A time that a ms offset would not give back exactly: kept as written.
  await store.insertEvents([delta(ra, A, 4, ' and', '2026-11-26T04:00:00.0100Z'), delta(ra, A, 5, ' more', at(1234))]);
  await store.insertEvents([delta(rb, B, 3, 'b2', at(1300)), other(ra, A, 6, 'tool', { phase: 'start', callId: 'c1', name: 'exec' }, at(1301))]);
  await store.insertEvents([delta(ra, A, 7, 'x', at(1400))]);
  await store.insertEvents([delta(ra, A, 8, 'y', at(1401)), delta(ra, A, 9, '', at(1402))]);
  await store.insertEvents([other(rb, B, 4, 'lifecycle', { phase: 'end' }, at(1403)), other(ra, A, 10, 'message', { message: { id: 1, content: 'Hello wörld' } }, at(1500)), other(ra, A, 11, 'lifecycle', { phase: 'end' }, at(1501))]);
}

/** Every place in the log, once all of it is handed out (PostgreSQL holds back rows above another transaction's horizon). */
async function allCursors(store: Store): Promise<EventCursor[]> {
  for (let spins = 0; spins < 2000; spins++) {
    const { rows, pending } = await store.eventsAfter({ after: START, limit: 10_000 });
    if (!pending) return [START, ...rows.map((r) => r.cursor)];
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('the log did not settle');
}

const eventRows = async (store: Store, runId: string) => Number((await sql<{ n: number }>`select count(*) as n from events where run_id = ${runId}`.execute(store.db)).rows[0]!.n);

const dialects: Array<[string, (schema?: string) => Promise<Store>]> = [
  ['sqlite', async () => new Store(await openDatabase({ dataDir: tmpDataDir() }))],
  ['postgres', async (schema) => new Store(await openDatabase({ dataDir: tmpDataDir(), databaseUrl: PG_URL, pgSchema: schema! }))],
];

describe.each(dialects)('folded text deltas on %s', (name, open) => {
  const schema = `t_fold_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  let store: Store;
  beforeAll(async () => {
    store = await open(schema);
  });
  afterAll(async () => {
    if (name === 'postgres') await sql.raw(`drop schema if exists ${schema} cascade`).execute(store.db);
    await store.close();
  });

  it('replays exactly the unfolded log from every cursor (before, inside, after the fold), by session, run and the whole log', async () => {
    const A = 'agent:main:fold-a';
    const B = 'agent:main:fold-b';
    await writeRuns(store, 'ra', 'rb', A, B);
    const cursors = await allCursors(store);
    const filters: Filter[] = [{}, { sessionKey: A }, { runId: 'ra' }, { sessionKey: B }];
    const limits = [1, 2, 3, 500];
    const before = new Map<string, string[]>();
    for (const c of cursors) for (const f of filters) for (const l of limits) before.set(`${encodeEventCursor(c)} ${JSON.stringify(f)} ${l}`, await replay(store, c, f, l));
    const plainBefore = name === 'postgres' ? await Promise.all(cursors.map((c) => store.resolveCursor({ id: c.id }))) : [];
    const maxSeq = await store.maxSeq('ra');

    expect(await eventRows(store, 'ra')).toBe(11);
    // seq 2–5 (4 deltas) and 7–9 (3 deltas): 3 + 2 rows go.
    expect(await store.foldRun('ra')).toBe(5);
    expect(await eventRows(store, 'ra')).toBe(6);
    expect(await store.foldRun('ra')).toBe(0); // once only
    expect(await store.foldRun('rb')).toBe(1); // b1, b2 (another transaction between them on PostgreSQL)

    for (const c of cursors) for (const f of filters) for (const l of limits) {
      const key = `${encodeEventCursor(c)} ${JSON.stringify(f)} ${l}`;
      expect(await replay(store, c, f, l), key).toEqual(before.get(key));
    }
    // A Last-Event-ID between two folded deltas: exactly the events after it.
    const full = before.get(`${encodeEventCursor(START)} {} 500`)!;
    const i = full.findIndex((l) => l.includes('" wörld \\"q\\"\\n"'));
    expect(await replay(store, cursors[i + 1]!, { sessionKey: A }, 500)).toEqual(before.get(`${encodeEventCursor(cursors[i + 1]!)} ${JSON.stringify({ sessionKey: A })} 500`));
    expect((await replay(store, cursors[i + 1]!, { runId: 'ra' }, 500))[0]).toContain('" and"');
    if (name === 'postgres') expect(await Promise.all(cursors.map((c) => store.resolveCursor({ id: c.id })))).toEqual(plainBefore);
    expect(await store.maxSeq('ra')).toBe(maxSeq);
  });

  it('a reader paging through the log while the fold commits gets every event once, in order', async () => {
    const A = 'agent:main:fold-c';
    const B = 'agent:main:fold-d';
    const from = (await allCursors(store)).at(-1)!; // before runs rc and rd
    await writeRuns(store, 'rc', 'rd', A, B);
    const all = await replay(store, from, {}, 500);
    for (const f of [{}, { sessionKey: A }, { runId: 'rc' }] as Filter[]) {
      const whole = await replay(store, from, f, 500);
      // The fold lands between any two pages of a reader: after page k, the rest is read from the folded log.
      for (let k = 0; k <= whole.length; k++) {
        const seen: string[] = [];
        let at = from;
        for (let p = 0; p < k; p++) {
          const { rows } = await store.eventsAfter({ after: at, ...f, limit: 1 });
          seen.push(...rows.map(lineOf));
          if (rows.length) at = rows[rows.length - 1]!.cursor;
        }
        await store.foldRun('rc');
        await store.foldRun('rd');
        seen.push(...(await replay(store, at, f, 1)));
        expect(seen, `${JSON.stringify(f)} fold after page ${k}`).toEqual(whole);
        await unfold(store, all, ['rc', 'rd']);
      }
    }
  });

  it('a reader on another connection concurrent with folds sees the same log on every read', async () => {
    const reader = await open(schema); // on SQLite a second store would be a second writer: read through the same one
    const r = name === 'postgres' ? reader : store;
    if (r !== reader) await reader.close();
    try {
      const runs = Array.from({ length: 8 }, (_, i) => [`rx${i}`, `ry${i}`] as const);
      const first = (await allCursors(store)).at(-1)!;
      for (const [x, y] of runs) await writeRuns(store, x, y, `agent:main:fold-${x}`, `agent:main:fold-${y}`);
      const whole = await replay(r, first, {}, 7);
      expect(whole.length).toBe(runs.length * 15);
      let done = false;
      let reads = 0;
      const reading = (async () => {
        while (!done) {
          expect(await replay(r, first, {}, 7)).toEqual(whole);
          reads++;
          await new Promise((res) => setImmediate(res)); // SQLite's queries resolve without yielding: let the folds run
        }
      })();
      for (const [x, y] of runs) {
        await store.foldRun(x);
        await store.foldRun(y);
        await new Promise((res) => setTimeout(res, 2));
      }
      done = true;
      await reading;
      expect(reads).toBeGreaterThan(0);
      expect(await replay(r, first, {}, 7)).toEqual(whole);
      expect(await replay(r, first, {}, 500)).toEqual(whole);
    } finally {
      if (r === reader) await reader.close();
    }
  });
});

/** Puts a folded run's rows back as they were written (the test folds the same log again). */
async function unfold(store: Store, whole: string[], runIds: string[]) {
  await sql`delete from events where run_id in (${sql.join(runIds)}) and fold_id is not null`.execute(store.db);
  for (const line of whole) {
    const [cursor, json, data] = line.split('\t') as [string, string, string];
    const ev = JSON.parse(json) as { id: number; runId: string; seq: number; stream: string; ts: string; sessionKey: string };
    if (!runIds.includes(ev.runId)) continue;
    if ((await sql<{ id: number }>`select id from events where id = ${ev.id}`.execute(store.db)).rows.length) continue;
    const tx = cursor.includes('-') ? cursor.split('-')[0]! : null;
    if (tx) await sql`insert into events (id, run_id, seq, stream, ts, session_key, data, tx) values (${ev.id}, ${ev.runId}, ${ev.seq}, ${ev.stream}, ${ev.ts}, ${ev.sessionKey}, ${data}, ${tx}::xid8)`.execute(store.db);
    else await sql`insert into events (id, run_id, seq, stream, ts, session_key, data) values (${ev.id}, ${ev.runId}, ${ev.seq}, ${ev.stream}, ${ev.ts}, ${ev.sessionKey}, ${data})`.execute(store.db);
  }
}
