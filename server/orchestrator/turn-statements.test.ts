// What a scripted turn (`agent` then `agent.wait`) costs the store, counted (never timed): on SQLite its write
// transactions (the start — session, run, input rows — and the end), on PostgreSQL its statements by shape; and an
// `agent.wait` after the run's end reads nothing.
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HotSqlite } from '../store/hot-sqlite';
import { startTestServer, type TestServer } from '../testing/harness';

const TURNS = 5;

// Only this file's server is counted: the SQLite and PostgreSQL projects run files one after another in one worker
// process (vitest.config.mts, isolate: false), and a server an earlier file started may still be writing (CI once
// counted two writes more than this file's turns). `mine` tells this server's connections: its SQLite handle, its
// PostgreSQL schema (each harness server has its own, in the connection's search_path).
let counts: Map<string, number> | null = null;
let mine: { sqlite?: unknown; pgSchema?: string } = {};
// Statements node-postgres sends, by their first three words, while `statements` counts. Installed before any
// connection is made: the store's prepared-statement wrapper binds each client's `query` when it connects.
{
  const proto = pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
  const orig = proto.query;
  proto.query = function (this: { connectionParameters?: { options?: string } }, config: unknown, ...rest: unknown[]) {
    if (counts && mine.pgSchema && ` ${this.connectionParameters?.options ?? ''} `.includes(` -c search_path=${mine.pgSchema} `)) {
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
    cls[m] = function (this: { source: string; database: unknown }, ...a: unknown[]) {
      if (counts && this.database === mine.sqlite) {
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
  /** A server beside it in this process, turning while the counts run (what a file before this one may leave). */
  let neighbour: TestServer;
  let busy: Promise<unknown> = Promise.resolve();
  const neighbourTurns = () =>
    (busy = Promise.all(Array.from({ length: 3 }, (_, i) => neighbour.rpc<{ runId: string }>('agent', { sessionKey: `agent:main:n-${i}`, message: 'hi' }).then(({ runId }) => neighbour.rpc('agent.wait', { runId, timeoutMs: 5000 })))));
  beforeAll(async () => {
    [s, neighbour] = await Promise.all([startTestServer(), startTestServer()]);
    const hot = (s.rt.store as unknown as { hot?: { raw: unknown } }).hot; // its private connection handle
    mine = { sqlite: hot?.raw };
    if (s.rt.store.dialect === 'postgres') {
      const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(s.rt.store.db);
      mine.pgSchema = rows[0]!.schema;
    }
  });
  afterAll(async () => {
    await busy;
    await Promise.all([s.close(), neighbour.close()]);
  });

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
        for (let i = 0; i < TURNS; i++) {
          neighbourTurns();
          await turns(`agent:main:count-${i % 2}`);
          await busy;
        }
      });
      const own = (s.rt.store as unknown as { hot: unknown }).hot;
      expect(writes.mock.calls.filter((c, i) => c[1] === true && writes.mock.contexts[i] === own)).toHaveLength(2 * n);
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
        neighbourTurns();
        const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:pg-count', message: `hello ${i}` });
        await s.rpc('agent.wait', { runId, timeoutMs: 5000 });
      }
      await busy;
      await s.rt.store.foldsSettled();
    });
    expect(counts.get('with q as')).toBe(TURNS); // the enqueue that starts the run
    expect(counts.get('with f as')).toBe(TURNS); // the end, its rows, events and folds
    expect(counts.get('with u as') ?? 0).toBe(0); // no fold statement of its own
  });
});
