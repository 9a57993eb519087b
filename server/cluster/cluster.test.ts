// Two gateway processes' runtimes on one PostgreSQL schema, over real HTTP: one active run per session across
// both, queue modes, cancel, approvals and waits whichever process receives them, events across processes,
// takeover after a death and after a graceful stop. Plus the plain refusals: SQLite is one process per data dir,
// and a DATABASE_URL with no user name works with no USER in the environment.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execOutDir, readSse, startChildServer, startTestServer, type TestServer, tmpDataDir, until } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const config = { agents: [{ id: 'main' }, { id: 'researcher' }], webhooks: { allowPrivateNetwork: true } };

type Started = { runId: string; status: string };

describe('two processes on one PostgreSQL', () => {
  let a: TestServer;
  let b: TestServer;
  const schema = `t_cl_${crypto.randomBytes(4).toString('hex')}`;
  beforeAll(async () => {
    a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });
  const wait = (s: TestServer, runId: string, timeoutMs = 20_000) => s.rpc<{ status: string; response?: string; error?: string }>('agent.wait', { runId, timeoutMs });
  const history = async (s: TestServer, sessionKey: string) =>
    (await s.rpc<{ messages: any[] }>('chat.history', { sessionKey, limit: 100, includeTools: true })).messages.reverse();

  it('a steer sent to B reaches the run on A; B waits for it; the other runs once after', async () => {
    const key = 'agent:main:steer-x';
    const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/sleep 700\n/reply first' });
    expect(r.status).toBe('started');
    const s = await b.rpc<Started>('agent', { sessionKey: key, message: 'from b', queueMode: 'steer' });
    expect(s).toEqual({ runId: r.runId, status: 'steered' });
    const f = await b.rpc<Started>('agent', { sessionKey: key, message: '/reply later', queueMode: 'followup' });
    expect(f.status).toBe('queued');
    expect((await wait(b, r.runId)).status).toBe('ok');
    expect(await wait(b, f.runId)).toMatchObject({ status: 'ok', response: 'later' });
    const h = await history(a, key);
    expect(h.filter((m) => m.kind === 'steer').map((m) => [m.content, m.runId])).toEqual([['from b', r.runId]]);
    expect(h.filter((m) => m.content === '/reply later').length).toBe(1);
  });

  it('a message claimed here while the session\'s last run is releasing it: the new lease\'s runs all run, no sweep needed', async () => {
    const key = 'agent:main:release-race';
    const { store, orchestrator } = a.rt;
    const o = orchestrator as any;
    // Counted when the sweep's backstop finds queued work of this session with nothing here driving it.
    let backstop = 0;
    const bs = o.backstop;
    const adopt = bs.h.adopt;
    bs.h.adopt = (k: string, epoch: number) => {
      if (k === key) backstop++;
      return adopt(k, epoch);
    };
    const placeQueued = bs.placeQueued;
    bs.placeQueued = (st: { key: string }) => {
      if (st.key === key) backstop++;
      return placeQueued.call(bs, st);
    };
    const finishRun = store.finishRun.bind(store);
    const late: { planted?: string; second?: Started } = {};
    // Between the run's end (lease released in the database) and the orchestrator going on with it: a queued run
    // (as another process leaves one) and a message received here, which claims the session again.
    (store as any).finishRun = async (...args: Parameters<typeof store.finishRun>) => {
      const end = await finishRun(...args);
      if (args[4].key === key && end.released && !late.planted) {
        late.planted = `run_planted_${crypto.randomBytes(4).toString('hex')}`;
        await store.insertRun({
          id: late.planted, session_key: key, status: 'queued', queue_mode: 'followup', created_at: new Date().toISOString(),
          input: JSON.stringify([{ content: '/reply planted', kind: 'message', author: { type: 'user', id: 'op' } }]),
          response: null, error: null, started_at: null, ended_at: null, origin: null, webhook: null, last_seq: 0, merged_into: null, cancel_requested: null,
        });
        late.second = await orchestrator.submit(key, { content: '/reply second', kind: 'message', author: { type: 'user', id: 'op' } });
      }
      return end;
    };
    try {
      const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/reply first' });
      expect((await wait(a, r.runId)).status).toBe('ok');
      await until(() => !!late.second, 10_000);
      expect(late.second!.status).toBe('queued'); // behind the planted run, which the claim found queued
      expect(await wait(a, late.planted!)).toMatchObject({ status: 'ok', response: 'planted' });
      expect(await wait(a, late.second!.runId)).toMatchObject({ status: 'ok', response: 'second' });
      expect(backstop).toBe(0);
    } finally {
      (store as any).finishRun = finishRun;
      bs.h.adopt = adopt;
      bs.placeQueued = placeQueued;
    }
  });

  it('a steer sent to B under another trust is not steered into A’s run: it runs after, as its own run', async () => {
    const key = 'agent:main:steer-trust-x';
    const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/sleep 600\n/reply first' });
    const origin = { channel: { id: 'telegram', from: 'stranger' } };
    const s = await b.rt.orchestrator.submit(key, { kind: 'message', content: 'from a channel', author: { type: 'user', id: 'stranger' } }, { queueMode: 'steer', origin });
    expect(s.runId).not.toBe(r.runId);
    expect(s.status).toBe('queued');
    expect((await wait(b, r.runId)).status).toBe('ok');
    expect(await wait(b, s.runId)).toMatchObject({ status: 'ok', response: 'echo: from a channel' });
    const h = await history(a, key);
    expect(h.filter((m) => m.kind === 'steer')).toEqual([]);
    expect(h.find((m) => m.content === 'from a channel')?.runId).toBe(s.runId);
  });

  it('reject on B while the session runs on A is agent_busy; interrupt from B aborts A’s run at once', async () => {
    const key = 'agent:main:interrupt-x';
    const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/sleep 30000\n/reply never' });
    const busy = await b.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'agent', params: { sessionKey: key, message: 'no', queueMode: 'reject' } });
    expect(busy.body.error).toMatchObject({ code: -32009, data: { code: 'agent_busy' } });
    const i = await b.rpc<Started>('agent', { sessionKey: key, message: 'now', queueMode: 'interrupt' });
    expect(await wait(b, r.runId, 10_000)).toMatchObject({ status: 'error', error: 'interrupted' });
    expect(await wait(b, i.runId, 10_000)).toMatchObject({ status: 'ok', response: 'echo: now' });
  });

  it('agent.cancel on B aborts a run on A; a queued run cancelled on A never runs', async () => {
    const key = 'agent:main:cancel-x';
    const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/sleep 30000\n/reply never' });
    const q = await a.rpc<Started>('agent', { sessionKey: key, message: '/reply queued', queueMode: 'followup' });
    await b.rpc('agent.cancel', { runId: q.runId });
    expect(await wait(a, q.runId)).toMatchObject({ status: 'error', error: 'cancelled' });
    await b.rpc('agent.cancel', { runId: r.runId });
    expect(await wait(b, r.runId, 10_000)).toMatchObject({ status: 'error', error: 'cancelled' });
    expect((await history(a, key)).some((m) => m.content === '/reply queued')).toBe(false);
    const again = await b.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'agent.cancel', params: { runId: r.runId } });
    expect(again.body.error).toMatchObject({ data: { code: 'not_cancelable' } });
  });

  it('an approval of a run on A, resolved on B, resumes it; SSE on B sees A’s events in order', async () => {
    const key = 'agent:main:approve-x';
    const reading = readSse(`${b.url}/api/gateway/events?sessionKey=${key}`, { until: (evs) => evs.some((e) => e.stream === 'lifecycle' && e.data.phase === 'end') });
    await new Promise((r) => setTimeout(r, 100));
    const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/tool exec {"command":"echo approved"}' });
    const p = await until(async () => (await b.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals[0]);
    await b.rpc('approvals.resolve', { approvalId: p.approvalId, decision: 'allow_once' });
    const w = await wait(b, r.runId);
    expect(w.status).toBe('ok');
    expect(w.response).toContain('approved');
    const evs = await reading;
    expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => i + 1));
    expect(evs.filter((e) => e.stream === 'approval').map((e) => e.data.phase)).toEqual(['requested', 'resolved']);
  });

  it('a decision made on B for a run on A says who decided in A\'s resolved event (it travels with the decision, no map left on B)', async () => {
    const key = 'agent:main:approve-by';
    const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/tool exec {"command":"echo decided"}' });
    const p = await until(async () => (await b.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals[0]);
    // As a chat approver's press on B does (server/channels/approvals.ts).
    const by = { type: 'chat' as const, channel: 'telegram', id: '5150', name: 'ann' };
    await b.rt.orchestrator.approvals.resolve(p.approvalId, 'allow_once', undefined, by);
    expect(await wait(b, r.runId)).toMatchObject({ status: 'ok', response: expect.stringContaining('decided') });
    const evs = await readSse(`${b.url}/api/gateway/events?runId=${r.runId}`, { lastEventId: 0, until: (e) => e.some((x) => x.stream === 'lifecycle' && x.data.phase === 'end') });
    expect(evs.find((e) => e.stream === 'approval' && e.data.phase === 'resolved')?.data).toMatchObject({ approvalId: p.approvalId, decision: 'allow_once', by });
  });

  it('a webhook is POSTed once, however many processes look at the outbox', async () => {
    const http = await import('node:http');
    let hits = 0;
    const receiver = http.createServer((req, res) => {
      hits++;
      req.resume();
      res.end('ok');
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const port = (receiver.address() as { port: number }).port;
    try {
      const r = await a.rpc<Started>('agent', { sessionKey: 'agent:main:hook-x', message: 'hi', webhook: { url: `http://127.0.0.1:${port}/hook` } });
      await wait(b, r.runId);
      for (let i = 0; i < 10; i++) {
        a.rt.webhooks.kick();
        b.rt.webhooks.kick();
        await new Promise((res) => setTimeout(res, 30));
      }
      await until(() => hits > 0);
      await new Promise((res) => setTimeout(res, 300));
      expect(hits).toBe(1);
    } finally {
      receiver.close();
    }
  });

  it('status counts the whole cluster and lists both processes', async () => {
    const st = await b.rpc<any>('status', {});
    expect(st.processes.length).toBeGreaterThanOrEqual(2);
    expect(st.node).toMatch(/^v\d+/);
  });
});

describe('takeover', () => {
  it('a process that dies is noticed and its running session is re-driven by the other', async () => {
    const schema = `t_cl_${crypto.randomBytes(4).toString('hex')}`;
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    try {
      const r = await a.rpc<Started>('agent', { sessionKey: 'agent:main:dies', message: '/sleep 600\n/reply survived' });
      await a.crash(); // its liveness connection drops, as with kill -9
      expect(await b.rpc('agent.wait', { runId: r.runId, timeoutMs: 15_000 })).toMatchObject({ status: 'ok', response: 'survived' });
      const h = (await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:dies' })).messages;
      expect(h.map((m) => m.content)).toEqual(['survived', '/sleep 600\n/reply survived']);
    } finally {
      await b.close();
    }
  });

  // (A zombie's run in flight is tested for real, by SIGSTOP and by pg_terminate_backend, in fencing.test.ts.)
  it('an approval resolved through a process that lost the lease does not run the tool there: the re-driver runs it, once', async () => {
    const schema = `t_cl_${crypto.randomBytes(4).toString('hex')}`;
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const file = path.join(execOutDir(), 'ran.txt'); // writable by the exec user, outside its private /tmp
    const key = 'agent:main:zombie-approval';
    try {
      const r = await a.rpc<Started>('agent', { sessionKey: key, message: `/tool exec {"command":"echo ran >> ${file}"}` });
      const p = await until(async () => (await b.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals[0]);
      // A keeps serving and keeps its run waiting on the approval, but loses its liveness without learning it
      // (a zombie): B takes the session over and waits on the same approval.
      a.rt.cluster!.crash();
      await until(async () => (await b.rt.store.getSession(key))?.owner === b.rt.cluster!.id, 15_000);
      await a.rpc('approvals.resolve', { approvalId: p.approvalId, decision: 'allow_once' });
      const w = await b.rpc<{ status: string; response: string }>('agent.wait', { runId: r.runId, timeoutMs: 15_000 });
      expect(w.status).toBe('ok');
      await new Promise((res) => setTimeout(res, 500)); // would A run it too?
      expect(fs.readFileSync(file, 'utf8')).toBe('ran\n');
      const h = (await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: key, includeTools: true })).messages;
      expect(h.filter((m) => m.kind === 'tool_result').length).toBe(1);
    } finally {
      await a.close().catch(() => undefined);
      await b.close();
    }
  });

  it('sessions.compact is agent_busy while the session’s run is active on another process', async () => {
    const schema = `t_cl_${crypto.randomBytes(4).toString('hex')}`;
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    try {
      const key = 'agent:main:compact-busy';
      const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/sleep 30000\n/reply never' });
      const busy = await b.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'sessions.compact', params: { sessionKey: key } });
      expect(busy.body.error).toMatchObject({ code: -32009, data: { code: 'agent_busy' } });
      await b.rpc('agent.cancel', { runId: r.runId });
      expect(await b.rpc('agent.wait', { runId: r.runId, timeoutMs: 10_000 })).toMatchObject({ status: 'error', error: 'cancelled' });
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a graceful stop leaves a pending approval pending; resolving it on the other process runs the tool', async () => {
    const schema = `t_cl_${crypto.randomBytes(4).toString('hex')}`;
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    try {
      const r = await a.rpc<Started>('agent', { sessionKey: 'agent:main:stops', message: '/tool exec {"command":"echo after-stop"}' });
      const p = await until(async () => (await b.rpc<{ approvals: any[] }>('approvals.list', {})).approvals[0]);
      await a.close();
      expect((await b.rpc<{ approvals: any[] }>('approvals.list', {})).approvals.map((x) => x.approvalId)).toEqual([p.approvalId]);
      await b.rpc('approvals.resolve', { approvalId: p.approvalId, decision: 'allow_once' });
      const w = await b.rpc<{ status: string; response: string }>('agent.wait', { runId: r.runId, timeoutMs: 15_000 });
      expect(w.status).toBe('ok');
      expect(w.response).toContain('after-stop');
    } finally {
      await b.close();
    }
  });
});

describe('plain refusals and defaults', () => {
  it('SQLite: a second process on the same data dir refuses to start, saying why', async () => {
    const dataDir = tmpDataDir();
    const first = await startChildServer({ dataDir });
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, '../testing/child-server.ts')], {
        env: { ...process.env, CROSSTALK_DATA_DIR: dataDir, CROSSTALK_TOKEN: 'x', CROSSTALK_LOG_LEVEL: 'silent', DATABASE_URL: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let err = '';
      child.stderr.on('data', (d) => (err += d));
      const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
      expect(code).not.toBe(0);
      expect(err).toContain('another crosstalk process');
      expect(err).toContain(`pid ${first.child.pid}`);
    } finally {
      first.kill();
      await first.exited;
    }
    // Once it is gone (even killed: a stale lock), a new process starts.
    const again = await startChildServer({ dataDir });
    again.kill();
  });

  it('PostgreSQL: a DATABASE_URL with no user name works with no USER or PGUSER set (as psql does)', async () => {
    const c = await startChildServer({
      dataDir: tmpDataDir(),
      env: { USER: '', PGUSER: '', DATABASE_URL: PG_URL.replace(/\/\/[^@/]*@/, '//'), CROSSTALK_TEST_PG_SCHEMA: `t_cl_${crypto.randomBytes(4).toString('hex')}` },
    });
    try {
      expect((await c.rpc<any>('status', {})).processes.length).toBe(1);
    } finally {
      c.kill();
      await c.exited;
    }
  });
});
