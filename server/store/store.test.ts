// The store on both dialects: one set of migrations and queries over SQLite (file) and PostgreSQL (127.0.0.1:5432).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from './db';
import { Store } from './store';
import { startTestServer, tmpDataDir, until } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = () => `t_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;

const dialects: Array<[string, () => Promise<Store>]> = [
  ['sqlite', async () => new Store(await openDatabase({ dataDir: tmpDataDir() }))],
  ['postgres', async () => new Store(await openDatabase({ dataDir: tmpDataDir(), databaseUrl: PG_URL, pgSchema: schema() }))],
];

describe.each(dialects)('store on %s', (name, open) => {
  let store: Store;
  beforeAll(async () => {
    store = await open();
  });
  afterAll(async () => {
    if (name === 'postgres') {
      const { sql } = await import('kysely');
      const r = await sql<{ s: string }>`select current_schema() as s`.execute(store.db);
      await sql.raw(`drop schema if exists ${r.rows[0]!.s} cascade`).execute(store.db);
    }
    await store.close();
  });

  it('migrates idempotently (opening twice is fine)', async () => {
    expect(store.dialect).toBe(name);
  });

  it('refuses a second running run in one session (a partial unique index on both dialects)', async () => {
    const run = (id: string, status: string) => ({
      id, session_key: 'agent:main:one-running', status, input: '[]', queue_mode: 'followup', response: null, error: null, created_at: new Date().toISOString(),
      started_at: null, ended_at: null, origin: null, webhook: null, last_seq: 0, merged_into: null, cancel_requested: null,
    });
    await store.insertRun(run('run_one_a', 'running'));
    await store.insertRun(run('run_one_b', 'queued'));
    await expect(store.insertRun(run('run_one_c', 'running'))).rejects.toThrow(/unique/i);
    await expect(store.updateRun('run_one_b', { status: 'running' })).rejects.toThrow(/unique/i);
    await store.updateRun('run_one_a', { status: 'ok' });
    await store.updateRun('run_one_b', { status: 'running' }); // the next one may run once the first has ended
    expect((await store.getRun('run_one_b'))?.status).toBe('running');
  });

  it.skipIf(name !== 'postgres')('a run whose session was deleted under it logs its end with seq still rising by 1 (its last rows are not written)', async () => {
    const key = 'agent:main:deleted-under-run';
    const ts = new Date().toISOString();
    await store.insertRun({
      id: 'run_gone', session_key: key, status: 'running', input: '[]', queue_mode: 'followup', response: null, error: null, created_at: ts,
      started_at: ts, ended_at: null, origin: null, webhook: null, last_seq: 0, merged_into: null, cancel_requested: null,
    });
    let seq = 3; // the run logged 3 events before
    let prepared = 0;
    const events = (rows: any[]) => {
      prepared++;
      return [
        ...rows.map((m) => ({ runId: 'run_gone', seq: ++seq, stream: 'message' as const, ts, sessionKey: key, data: { message: m } })),
        { runId: 'run_gone', seq: ++seq, stream: 'lifecycle' as const, ts, sessionKey: key, data: { phase: 'end', status: 'ok' } },
      ];
    };
    const answer = { sessionKey: key, runId: 'run_gone', role: 'assistant' as const, kind: 'message' as const, content: 'done', author: { type: 'agent' as const, id: 'main' } };
    const end = await store.finishRun('run_gone', { status: 'ok', response: 'done', ended_at: ts, last_seq: 5 }, [], [], { key, idle: true, release: true }, { messages: [answer], events });
    expect(prepared).toBe(1);
    expect(end.events.map((e) => [e.seq, e.stream])).toEqual([[4, 'lifecycle']]);
    expect(await store.getRun('run_gone')).toMatchObject({ status: 'ok', last_seq: 4 });
    const logged = await store.db.selectFrom('events').select(['seq', 'stream']).where('run_id', '=', 'run_gone').execute();
    expect(logged).toEqual([{ seq: 4, stream: 'lifecycle' }]);
  });

  it('ensures sessions once and lists them newest activity first with a keyset', async () => {
    const a = await store.ensureSession({ key: 'agent:main:a', agentId: 'main', kind: 'other' });
    const again = await store.ensureSession({ key: 'agent:main:a', agentId: 'main', kind: 'other' });
    expect(again.created_at).toBe(a.created_at);
    for (const k of ['b', 'c', 'd']) {
      await new Promise((r) => setTimeout(r, 2));
      await store.ensureSession({ key: `agent:main:${k}`, agentId: 'main', kind: 'other' });
    }
    const p1 = await store.listSessions({ limit: 2 });
    expect(p1.map((r) => r.key)).toEqual(['agent:main:d', 'agent:main:c']);
    const last = p1[1]!;
    const p2 = await store.listSessions({ limit: 5, after: [last.last_activity_at, last.key] });
    expect(p2.map((r) => r.key)).toEqual(['agent:main:b', 'agent:main:a']);
  });

  it('appends messages in a transaction, counts them, and pages history by id', async () => {
    const rows = await store.appendMessages(
      Array.from({ length: 7 }, (_, i) => ({
        sessionKey: 'agent:main:a',
        role: i % 2 ? ('assistant' as const) : ('user' as const),
        kind: 'message' as const,
        content: `m${i}`,
        author: { type: 'user' as const, id: 'u' },
      })),
    );
    expect(rows.map((r) => r.id)).toEqual([...rows.map((r) => r.id)].sort((x, y) => x - y));
    await store.appendMessages([
      { sessionKey: 'agent:main:a', role: 'assistant', kind: 'tool_call', content: '', author: { type: 'agent', id: 'main' }, tool: { name: 'exec', callId: 'c1', args: { command: 'ls' } } },
    ]);
    const s = await store.getSession('agent:main:a');
    expect(s?.message_count).toBe(8);
    expect(s!.bytes).toBeGreaterThan(14);
    const page = await store.history({ sessionKey: 'agent:main:a', limit: 3, includeTools: false });
    expect(page.map((r) => r.content)).toEqual(['m6', 'm5', 'm4']);
    const next = await store.history({ sessionKey: 'agent:main:a', limit: 3, includeTools: false, beforeId: page[2]!.id });
    expect(next.map((r) => r.content)).toEqual(['m3', 'm2', 'm1']);
    const withTools = await store.history({ sessionKey: 'agent:main:a', limit: 1, includeTools: true });
    expect(withTools[0]!.tool_name).toBe('exec');
  });

  it('writes event batches with rising ids and reads them after an id', async () => {
    const ts = new Date().toISOString();
    const ids = await store.insertEvents(
      Array.from({ length: 450 }, (_, i) => ({ runId: 'r1', seq: i + 1, stream: 'assistant' as const, ts, sessionKey: 'agent:main:a', data: { delta: String(i) } })),
    );
    expect(ids.length).toBe(450);
    const nums = ids.map((x) => x!.id);
    expect(nums).toEqual([...nums].sort((a, b) => a - b));
    const at = ids[99]!;
    // On PostgreSQL a read hands out only rows below the settled horizon: a transaction of this database older than the
    // batch (another suite's, files running side by side) holds them back (`pending`) until it ends. A single read
    // found [] that way once under load.
    const { rows: after } = await until(async () => {
      const r = await store.eventsAfter({ after: { id: at.id, ...(at.tx ? { tx: BigInt(at.tx) } : {}) }, sessionKey: 'agent:main:a', limit: 10 });
      return r.pending ? undefined : r;
    }, 15_000);
    expect(after.map((e) => e.seq)).toEqual([101, 102, 103, 104, 105, 106, 107, 108, 109, 110]);
    expect(JSON.parse(after[0]!.data)).toEqual({ delta: '100' });
    expect(await store.maxSeq('r1')).toBe(450);
  });

  it('settles an approval exactly once', async () => {
    await store.insertApproval({ id: 'apr1', session_key: 'agent:main:a', run_id: 'r1', call_id: 'c1', tool: 'exec', args: '{}', status: 'pending', decision: null, reason: null, requested_at: new Date().toISOString(), resolved_at: null });
    expect((await store.pendingApprovals({ sessionKey: 'agent:main:a' })).map((a) => a.id)).toEqual(['apr1']);
    const results = await Promise.all([store.settleApproval('apr1', 'allowed', 'allow_once', null), store.settleApproval('apr1', 'denied', 'deny', null)]);
    expect(results.filter(Boolean).length).toBe(1);
    expect(await store.pendingApprovals({})).toEqual([]);
  });

  it('keeps idempotency results and tool rules', async () => {
    await store.putIdempotent('k', { runId: 'r', status: 'started' });
    await store.putIdempotent('k', { runId: 'other', status: 'started' });
    expect(await store.getIdempotent('k')).toEqual({ runId: 'r', status: 'started' });
    await store.addToolRule('agent:main:a', 'exec');
    await store.addToolRule('agent:main:a', 'exec');
    expect(await store.hasToolRule('agent:main:a', 'exec')).toBe(true);
    expect(await store.hasToolRule('agent:main:b', 'exec')).toBe(false);
  });
});

describe('the event log on PostgreSQL, with a long transaction in another database', () => {
  it('still hands out settled events (the horizon is not the cluster-wide xmin)', async () => {
    const pg = await import('pg');
    // A transaction with an id, open in another database of the same server (as a pg_dump or a bulk load would be).
    const other = new pg.default.Client({ connectionString: PG_URL.replace(/\/[^/?]*(\?|$)/, '/postgres$1') });
    await other.connect();
    const store = new Store(await openDatabase({ dataDir: tmpDataDir(), databaseUrl: PG_URL, pgSchema: schema() }));
    try {
      await other.query('begin');
      await other.query('select pg_current_xact_id()');
      const head = await store.logHead();
      const ts = new Date().toISOString();
      await store.insertEvents([1, 2, 3].map((seq) => ({ runId: 'r_long', seq, stream: 'assistant' as const, ts, sessionKey: 'agent:main:long', data: { delta: String(seq) } })));
      // Other suites' short transactions in this database (files run side by side) may hold the horizon a moment;
      // the long one in the other database, open throughout, must not (before the fix this never settled).
      const { rows, pending } = await until(async () => {
        const r = await store.eventsAfter({ after: head, sessionKey: 'agent:main:long', limit: 10 });
        return r.rows.length === 3 && !r.pending ? r : undefined;
      }, 15_000);
      expect(rows.map((r) => r.seq)).toEqual([1, 2, 3]);
      expect(pending).toBe(false);
      const newest = await store.logHead();
      expect(newest.id).toBe(rows[2]!.id);
      expect((await store.settledHorizon()).tx).toBeGreaterThanOrEqual(rows[2]!.cursor.tx!);
    } finally {
      await other.query('rollback').catch(() => undefined);
      await other.end();
      const { sql } = await import('kysely');
      const r = await sql<{ s: string }>`select current_schema() as s`.execute(store.db);
      await sql.raw(`drop schema if exists ${r.rows[0]!.s} cascade`).execute(store.db);
      await store.close();
    }
  });
});

describe('the whole gateway on PostgreSQL', () => {
  it('runs a turn, an approval and history paging with DATABASE_URL set', async () => {
    const pgSchema = schema();
    const s = await startTestServer({ databaseUrl: PG_URL, pgSchema });
    try {
      const r = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:main', message: 'hello' });
      expect(await s.rpc('agent.wait', { runId: r.runId })).toMatchObject({ status: 'ok', response: 'echo: hello' });
      const x = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:main', message: '/tool exec {"command":"echo pg"}' });
      // Until the item is raised: bounded by time, not by a count of polls, which a loaded machine can use up first.
      const approvals = await until(async () => {
        const list = (await s.rpc<{ approvals: any[] }>('approvals.list', {})).approvals;
        return list.length ? list : undefined;
      }, 15_000);
      await s.rpc('approvals.resolve', { approvalId: approvals[0].approvalId, decision: 'allow_once' });
      expect((await s.rpc<{ response: string }>('agent.wait', { runId: x.runId })).response).toContain('"stdout":"pg\\n"');
      const h = await s.rpc<{ messages: any[]; next_cursor: string }>('chat.history', { sessionKey: 'agent:main:main', limit: 2 });
      expect(h.messages.map((m) => m.content)).toEqual([expect.stringContaining('exec: '), '/tool exec {"command":"echo pg"}']);
      const h2 = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:main', limit: 2, cursor: h.next_cursor });
      expect(h2.messages.map((m) => m.content)).toEqual(['echo: hello', 'hello']);
    } finally {
      const { sql } = await import('kysely');
      await sql.raw(`drop schema if exists ${pgSchema} cascade`).execute(s.rt.store.db);
      await s.close();
    }
  });
});

describe('migration 0009 on SQLite', () => {
  it('ends all but the oldest of two running runs of a session (an older store) before building the index', async () => {
    const { sql } = await import('kysely');
    const dataDir = tmpDataDir();
    let store = new Store(await openDatabase({ dataDir }));
    // The store as an older version left it: no index, and two running runs in one session.
    await sql`drop index runs_one_running`.execute(store.db);
    await sql`delete from crosstalk_migrations where name = '0009_one_running'`.execute(store.db);
    // …and none of the later migrations (they run again after 0009).
    await sql`delete from crosstalk_migrations where name = '0010_idempotency_claims'`.execute(store.db);
    await sql`drop index idempotency_created`.execute(store.db);
    await sql`drop index channel_senders_pending`.execute(store.db);
    for (const c of ['state', 'owner', 'run_id']) await sql`alter table idempotency drop column ${sql.raw(c)}`.execute(store.db);
    const run = (id: string, created: string) => ({
      id, session_key: 'agent:main:old', status: 'running', input: '[]', queue_mode: 'followup', response: null, error: null, created_at: created,
      started_at: created, ended_at: null, origin: null, webhook: null, last_seq: 0, merged_into: null, cancel_requested: null,
    });
    await store.insertRun(run('run_old_b', '2026-01-01T00:00:02.000Z'));
    await store.insertRun(run('run_old_a', '2026-01-01T00:00:01.000Z'));
    await store.close();
    store = new Store(await openDatabase({ dataDir }));
    try {
      expect((await store.getRun('run_old_a'))?.status).toBe('running');
      expect(await store.getRun('run_old_b')).toMatchObject({ status: 'interrupted', error: 'a second running run of its session' });
      await expect(store.updateRun('run_old_b', { status: 'running' })).rejects.toThrow(/unique/i);
    } finally {
      await store.close();
    }
  });
});
