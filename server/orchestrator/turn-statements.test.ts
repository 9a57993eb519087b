// What a scripted turn (`agent` then `agent.wait`) costs the store, counted (never timed): on SQLite its write
// transactions (the start — session, run, input rows — and the end), on PostgreSQL its statements by shape; and an
// `agent.wait` after the run's end reads nothing.
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HotSqlite } from '../store/hot-sqlite';
import { startTestServer, type TestServer } from '../testing/harness';

const TURNS = 5;

// Statements node-postgres sends, by their first three words, while `statements` counts. Installed before any
// connection is made: the store's prepared-statement wrapper binds each client's `query` when it connects.
let counts: Map<string, number> | null = null;
{
  const proto = pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
  const orig = proto.query;
  proto.query = function (this: unknown, config: unknown, ...rest: unknown[]) {
    if (counts) {
      const text = typeof config === 'string' ? config : ((config as { text?: string })?.text ?? '');
      const shape = text.replace(/\s+/g, ' ').trim().split(' ').slice(0, 3).join(' ');
      counts.set(shape, (counts.get(shape) ?? 0) + 1);
    }
    return orig.call(this, config, ...rest);
  };
}
// The same for better-sqlite3's statements (its Statement class is one for every connection; BEGIN and COMMIT of
// its transactions are statements too).
{
  const cls = Object.getPrototypeOf(new BetterSqlite3(':memory:').prepare('select 1')) as Record<string, (...a: unknown[]) => unknown>;
  for (const m of ['run', 'get', 'all', 'iterate']) {
    const f = cls[m]!;
    cls[m] = function (this: { source: string }, ...a: unknown[]) {
      if (counts) {
        const shape = this.source.replace(/\s+/g, ' ').trim().split(' ').slice(0, 3).join(' ');
        counts.set(shape, (counts.get(shape) ?? 0) + 1);
      }
      return f.apply(this, a);
    };
  }
}
async function statements(fn: () => Promise<void>): Promise<Map<string, number>> {
  const mine = (counts = new Map());
  try {
    await fn();
  } finally {
    counts = null;
  }
  return mine;
}

describe('a turn’s store statements', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.close());

  /** TURNS turns on one session, each waited for after its end (the run is over before `agent.wait` arrives). */
  async function turns(key: string) {
    for (let i = 0; i < TURNS; i++) {
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: `hello ${i}` });
      await vi.waitUntil(async () => (await s.rt.store.getRun(runId))?.status === 'ok');
      expect(await s.rpc('agent.wait', { runId, timeoutMs: 5000 })).toMatchObject({ status: 'ok', response: `echo: hello ${i}` });
    }
  }

  it('SQLite: two write transactions a turn (its start with its session and run, its end); agent.wait reads no run', async () => {
    if (s.rt.store.dialect !== 'sqlite') return;
    const writes = vi.spyOn(HotSqlite.prototype as unknown as { locked: (fn: unknown, write: boolean) => unknown }, 'locked');
    const reads = vi.spyOn(HotSqlite.prototype, 'getRun');
    try {
      // The warm-up turn ended before counting: its end is not one of the turns' writes.
      const warm = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:warm', message: 'warm' });
      await s.rpc('agent.wait', { runId: warm.runId, timeoutMs: 5000 });
      writes.mockClear();
      // A new session each turn (its creation is part of the start) and a session turned again.
      const n = TURNS * TURNS;
      const counted = await statements(async () => {
        for (let i = 0; i < TURNS; i++) await turns(`agent:main:count-${i % 2}`);
      });
      expect(writes.mock.calls.filter((c) => c[1] === true)).toHaveLength(2 * n);
      // Besides the turns': the search index's batches behind them (server/store/search-indexer.ts), one each.
      expect(counted.get('BEGIN')).toBe(2 * n + (counted.get('update search_indexed set') ?? 0));
      // Its events written once, already folded: nothing rewritten or deleted.
      expect(counted.get('insert into "events"')).toBe(n);
      expect(counted.get('update "events" set') ?? 0).toBe(0);
      expect(counted.get('delete from "events"') ?? 0).toBe(0);
      // A wait after the run's end is answered from memory.
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:count-0', message: 'x' });
      await vi.waitUntil(async () => (await s.rt.store.getRun(runId))?.status === 'ok');
      reads.mockClear();
      expect(await s.rpc('agent.wait', { runId, timeoutMs: 5000 })).toMatchObject({ status: 'ok', response: 'echo: x' });
      expect(reads).not.toHaveBeenCalled();
    } finally {
      writes.mockRestore();
      reads.mockRestore();
    }
  });

  it('PostgreSQL: one statement to start a turn, one to end it with its events folded, none for agent.wait', async () => {
    if (s.rt.store.dialect !== 'postgres') return;
    await s.rpc('agent', { sessionKey: 'agent:main:warm', message: 'warm' });
    const counts = await statements(async () => {
      for (let i = 0; i < TURNS; i++) {
        const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:pg-count', message: `hello ${i}` });
        await s.rpc('agent.wait', { runId, timeoutMs: 5000 });
      }
      await s.rt.store.foldsSettled();
    });
    expect(counts.get('with q as')).toBe(TURNS); // the enqueue that starts the run
    expect(counts.get('with f as')).toBe(TURNS); // the end, its rows, events and folds
    expect(counts.get('with u as') ?? 0).toBe(0); // no fold statement of its own
  });
});
