// Handovers on PostgreSQL that must not drive a run twice: a re-drive continues the run's event seq where the log
// is; a process declared dead that claims its session again lets its old copy of the run stop (fenced) before the
// new lease's fence is set; a stopping process takes no lease (work that reaches it during its grace is queued for
// the others); a SIGTERM'd process hands a run waiting on an approval over at once, not after its whole grace.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { FencedError } from '../store/store';
import { expandRow } from '../store/event-fold';
import { execOutDir, startChildServer, startTestServer, type TestServer, tmpDataDir, until } from '../testing/harness';
import { webhookRow } from '../webhooks/deliver';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const config = { agents: [{ id: 'main', tools: { exec: 'ask' } }, { id: 'researcher' }], webhooks: { allowPrivateNetwork: true } };

type Started = { runId: string; status: string };
const newSchema = () => `t_ho_${crypto.randomBytes(4).toString('hex')}`;

async function seqsOf(s: TestServer, runId: string): Promise<number[]> {
  // The stored rows, an ended run's folded deltas expanded (server/store/event-fold.ts), settled or not.
  const rows = await s.rt.store.db.selectFrom('events').selectAll().where('run_id', '=', runId).orderBy('id').execute();
  return rows.flatMap((r) => expandRow({ ...r, fold_id: r.fold_id ?? null })).map((r) => Number(r.seq));
}

describe('handovers drive a run once (PostgreSQL)', () => {
  it('a re-drive continues the run’s seq where the log is, even in a process that had the run registered from before', async () => {
    const schema = newSchema();
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    try {
      const key = 'agent:main:seq-redrive';
      const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/sleep 1500\n/reply survived' });
      // A has logged the run's start and its input row (seq 1, 2).
      await until(async () => (await b.rt.store.maxSeq(r.runId)) >= 2);
      // B registered this run's events earlier, at seq 1 (as it does when an approval of it is decided there): the
      // log is further on now.
      b.rt.bus.registerRun(r.runId, key, 1);
      await a.crash(); // as with kill -9: B takes the session over and re-drives the run
      expect(await b.rpc('agent.wait', { runId: r.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok', response: 'survived' });
      await b.rt.bus.drain();
      // Every seq once, rising by one in log order: A's 1, 2, then B's re-drive from 3 (not from 2 again).
      const seqs = await seqsOf(b, r.runId);
      expect(seqs.length).toBeGreaterThan(2);
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    } finally {
      await b.close();
    }
  }, 180_000);

  it('an interrupt accepted while the run it interrupts has lost its process: that run is closed `interrupted`, not re-driven, and the interrupt runs', async () => {
    const schema = newSchema();
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    try {
      const key = 'agent:main:interrupt-orphan';
      // Long enough that B, had it taken the session over before the interrupt came (a loaded machine: CI at 13:32
      // here), could not re-drive it to its answer first: then the interrupt aborts it on B, to the same end.
      const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/sleep 8000\n/reply old answer' });
      await until(async () => (await b.rt.store.maxSeq(r.runId)) >= 2);
      await a.crash(); // as with kill -9: A still holds the lease until it is declared dead
      const i = await b.rpc<Started>('agent', { sessionKey: key, message: '/reply new answer', queueMode: 'interrupt' });
      // Before: B took the session over, re-drove the old run to its answer, then ran the interrupting message.
      expect(await b.rpc('agent.wait', { runId: r.runId, timeoutMs: 30_000 })).toMatchObject({ status: 'error', error: 'interrupted' });
      expect(await b.rpc('agent.wait', { runId: i.runId, timeoutMs: 30_000 })).toMatchObject({ status: 'ok', response: 'new answer' });
      const h = (await b.rpc<{ messages: Array<{ role: string; content: string }> }>('chat.history', { sessionKey: key })).messages;
      expect(h.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(['new answer']);
    } finally {
      await b.close();
    }
  }, 180_000);

  it('a process declared dead that claims its session back: the old copy of its run writes nothing under the new lease, and the run ends once', async () => {
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: newSchema(), config });
    try {
      const key = 'agent:main:zombie-self';
      const { store, bus } = a.rt;
      const o = a.rt.orchestrator as any;
      let held = false;
      const takeRun = bus.takeRun.bind(bus);
      // The run has finished its last step and is recording its end (past its last abort check) when the others
      // declare this process dead (its heartbeat was late, as under load) …
      (bus as any).takeRun = async (runId: string) => {
        if (!held && (bus as any).runs.get(runId)?.sessionKey === key) {
          held = true;
          const st = o.sessions.get(key);
          const me = a.rt.cluster!.id;
          await sql`update processes set status = 'dead' where id = ${me}`.execute(store.db);
          await sql`update sessions set owner = null, epoch = nextval('session_epochs') where owner = ${me}`.execute(store.db);
          // … and it learns so at its next heartbeat, registers again and claims the session back, before this
          // copy of the run goes on.
          await until(() => {
            const now = o.sessions.get(key);
            return !!now && now !== st;
          }, 30_000);
        }
        return takeRun(runId);
      };
      const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/reply once' });
      expect(await a.rpc('agent.wait', { runId: r.runId, timeoutMs: 30_000 })).toMatchObject({ status: 'ok', response: 'once' });
      await until(async () => !(o.sessions.get(key)?.active), 10_000);
      await bus.drain();
      expect(held).toBe(true);
      const h = (await a.rpc<{ messages: any[] }>('chat.history', { sessionKey: key })).messages;
      expect(h.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(['once']);
      const ends = await store.db.selectFrom('events').select('data').where('run_id', '=', r.runId).where('stream', '=', 'lifecycle').execute();
      expect(ends.map((e) => JSON.parse(e.data).phase).filter((x) => x === 'end' || x === 'error')).toEqual(['end']);
      const seqs = await seqsOf(a, r.runId);
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    } finally {
      await a.close();
    }
  }, 180_000);

  it('a session that was loading when its process was declared dead is not driven by that load: the run ends once (the rolling-restart double drive)', async () => {
    // The 100-restart rolling run on PostgreSQL (issue 20 item 8): a process under load took over an orphaned
    // session and, while it loaded the session's runs, was declared dead (stale heartbeat). `fenced()` dropped the
    // loading state and cleared its fence (no run executing yet); the load then went on and re-drove the run from
    // that dropped state with no fence at all, beside the lease holder's re-drive: the run ended twice.
    const schema = newSchema();
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    let bUp = true;
    try {
      const key = 'agent:main:fenced-load';
      const { store, bus } = a.rt;
      const o = a.rt.orchestrator as any;
      let held = false;
      const unfinishedRuns = store.unfinishedRuns.bind(store);
      (store as any).unfinishedRuns = async (k: string) => {
        const rows = await unfinishedRuns(k);
        if (!held && k === key) {
          held = true;
          // A claimed the orphaned session and read its runs (the run in flight among them) when the others declare
          // it dead; it learns so at its next heartbeat (its states dropped, its fences cleared), registers again …
          const me = a.rt.cluster!.id;
          await sql`update processes set status = 'dead' where id = ${me}`.execute(store.db);
          await sql`update sessions set owner = null, epoch = nextval('session_epochs') where owner = ${me}`.execute(store.db);
          await until(() => a.rt.cluster!.id !== me, 30_000);
        }
        // … and only then does this load go on, with the run still running in what it read.
        return rows;
      };
      const r = await b.rpc<Started>('agent', { sessionKey: key, message: '/sleep 4000\n/reply once' });
      await until(async () => (await a.rt.store.maxSeq(r.runId)) >= 2);
      bUp = false;
      await b.crash(); // as with kill -9: A takes the session over (and is declared dead while loading it)
      expect(await a.rpc('agent.wait', { runId: r.runId, timeoutMs: 60_000 })).toMatchObject({ status: 'ok', response: 'once' });
      expect(held).toBe(true);
      // Whatever copy of the run might still go on here has stopped.
      await until(() => !o.executions.has(r.runId), 30_000);
      await bus.drain();
      const h = (await a.rpc<{ messages: any[] }>('chat.history', { sessionKey: key })).messages;
      expect(h.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(['once']);
      const ends = await store.db.selectFrom('events').select('data').where('run_id', '=', r.runId).where('stream', '=', 'lifecycle').execute();
      expect(ends.map((e) => JSON.parse(e.data).phase).filter((x) => x === 'end' || x === 'error')).toEqual(['end']);
      const seqs = await seqsOf(a, r.runId);
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    } finally {
      await a.close();
      if (bUp) await b.close();
    }
  }, 240_000);

  it('a run whose session has no fence here (its state was dropped) writes no end beside the lease holder’s re-drive', async () => {
    const schema = newSchema();
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    try {
      const key = 'agent:main:unfenced-end';
      const o = a.rt.orchestrator as any;
      const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/sleep 3000\n/reply once' });
      await until(async () => (await b.rt.store.maxSeq(r.runId)) >= 2);
      // A's fence on the session is gone while its copy of the run goes on (any path that drops a state and clears
      // its fence, as a load dropped by `fenced()` did) …
      a.rt.store.clearFence(key);
      // … and B holds the session now and re-drives the run.
      const claimed = await sql<{ epoch: string }>`update sessions set owner = ${b.rt.cluster!.id}, epoch = nextval('session_epochs') where key = ${key} returning epoch`.execute(b.rt.store.db);
      await (b.rt.orchestrator as any).adopt(key, Number(claimed.rows[0]!.epoch));
      expect(await b.rpc('agent.wait', { runId: r.runId, timeoutMs: 60_000 })).toMatchObject({ status: 'ok', response: 'once' });
      await until(() => !o.executions.has(r.runId), 30_000);
      await a.rt.bus.drain();
      await b.rt.bus.drain();
      const h = (await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: key })).messages;
      expect(h.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(['once']);
      const ends = await b.rt.store.db.selectFrom('events').select('data').where('run_id', '=', r.runId).where('stream', '=', 'lifecycle').execute();
      expect(ends.map((e) => JSON.parse(e.data).phase).filter((x) => x === 'end' || x === 'error')).toEqual(['end']);
    } finally {
      await a.close();
      await b.close();
    }
  }, 240_000);

  it('a session state this process let go starts nothing: a queued run placed late into it runs once, where the lease is', async () => {
    const schema = newSchema();
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    try {
      const key = 'agent:main:late-place';
      const o = a.rt.orchestrator as any;
      // The run sleeps first: A's state for the session is still there when `agent` has answered (a run that ended at
      // once could let the session go before the answer reached the test, on a loaded machine).
      const r1 = await a.rpc<Started>('agent', { sessionKey: key, message: '/sleep 1000\n/reply one' });
      const st = o.sessions.get(key);
      expect(st).toBeTruthy();
      expect(await a.rpc('agent.wait', { runId: r1.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok' });
      // A's run ended and A let the session go (its state is dropped, its fence cleared) …
      await until(() => o.sessions.get(key) !== st);
      // … and B drives it now, with a run in flight and one queued behind it.
      const r2 = await b.rpc<Started>('agent', { sessionKey: key, message: '/sleep 1500\n/reply two' });
      const r3 = await b.rpc<Started>('agent', { sessionKey: key, message: '/reply three', queueMode: 'followup' });
      expect([r2.status, r3.status]).toEqual(['started', 'queued']);
      // A continuation of A's old state that was still in flight (a look for queued work after its run's end, a
      // 'work' message) places the queued run into that state.
      o.placeStored(st, await a.rt.store.getRun(r3.runId));
      expect(await b.rpc('agent.wait', { runId: r2.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok', response: 'two' });
      expect(await b.rpc('agent.wait', { runId: r3.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok', response: 'three' });
      const h = (await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: key })).messages;
      expect(h.filter((m) => m.content === 'three').length).toBe(1);
    } finally {
      await a.close();
      await b.close();
    }
  }, 180_000);

  it('a stopping process takes no lease: a message reaching it during its stop is queued, and another process runs it', async () => {
    const schema = newSchema();
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    try {
      const key = 'agent:main:while-stopping';
      // A's graceful stop has let its sessions go; a request in flight (or a callback turn of a run that ended in the
      // grace) still reaches its orchestrator.
      await a.rt.orchestrator.shutdown({ graceMs: 0 });
      const r = await a.rt.orchestrator.submit(key, { content: '/reply after', kind: 'message', author: { type: 'user', id: 'op' } });
      expect(r.status).toBe('queued');
      expect((await b.rt.store.getSession(key))?.owner ?? null).not.toBe(a.rt.cluster!.id);
      expect(await b.rpc('agent.wait', { runId: r.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok', response: 'after' });
      const h = (await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: key })).messages;
      expect(h.map((m) => m.content)).toEqual(['after', '/reply after']);
    } finally {
      await a.close();
      await b.close();
    }
  }, 180_000);

  it('SIGTERM: a run waiting on an approval is handed over at once (not held through the grace); approved on the other process, its tool runs once', async () => {
    const schema = newSchema();
    const dir = tmpDataDir('crosstalk-ho-');
    const configFile = path.join(dir, 'config.json');
    fs.writeFileSync(configFile, JSON.stringify(config));
    const file = path.join(execOutDir(), 'ran.txt'); // writable by the exec user, outside its private /tmp
    // A ten-minute grace: A exits before the test's timeout only if it does not hold the waiting run for it.
    const a = await startChildServer({ dataDir: path.join(dir, 'a'), configFile, env: { DATABASE_URL: PG_URL, CROSSTALK_TEST_PG_SCHEMA: schema, CROSSTALK_SHUTDOWN_GRACE_MS: '600000' } });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    try {
      const key = 'agent:main:approval-handover';
      const r = await a.rpc<Started>('agent', { sessionKey: key, message: `/tool exec {"command":"echo ran >> ${file}"}` });
      const p = await until(async () => (await b.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals[0]);
      await until(async () => (await b.rt.store.getRun(r.runId))?.status === 'waiting_approval');
      a.child.kill('SIGTERM');
      expect(await a.exited).toBe(0);
      // The approval is still pending, and B holds (or takes) the session with the run waiting on it.
      expect((await b.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals.map((x) => x.approvalId)).toEqual([p.approvalId]);
      await b.rpc('approvals.resolve', { approvalId: p.approvalId, decision: 'allow_once' });
      expect(await b.rpc('agent.wait', { runId: r.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok' });
      expect(fs.readFileSync(file, 'utf8')).toBe('ran\n');
    } finally {
      a.kill();
      await b.close();
    }
  }, 300_000);

  it('a run end refused by the fence inside its transaction does not wait for a second pool connection (a pool of 1: FencedError, no deadlock)', async () => {
    // A process declared dead ends its runs fenced, several at once: with the pool exhausted by their transactions,
    // each one's look at the session on another connection waited for good (the process never stopped).
    const before = process.env.CROSSTALK_PG_POOL;
    process.env.CROSSTALK_PG_POOL = '1';
    let a: TestServer;
    try {
      a = await startTestServer({ databaseUrl: PG_URL, pgSchema: newSchema(), config });
    } finally {
      if (before === undefined) delete process.env.CROSSTALK_PG_POOL;
      else process.env.CROSSTALK_PG_POOL = before;
    }
    try {
      const key = 'agent:main:fenced-end';
      const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/reply x' });
      expect(await a.rpc('agent.wait', { runId: r.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok' });
      const { store } = a.rt;
      store.setFence(key, 1); // a lease epoch long gone (epochs come from one sequence)
      const hook = webhookRow(r.runId, { url: 'http://127.0.0.1:9/hook' }, { runId: r.runId }, `late_${r.runId}`);
      await expect(store.finishRun(r.runId, { status: 'ok' }, [], [hook], { key, idle: true })).rejects.toBeInstanceOf(FencedError);
      store.clearFence(key);
    } finally {
      await a!.close();
    }
  }, 180_000);
});
