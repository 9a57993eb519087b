// A delegate's follow-ups across processes (PostgreSQL; seed 4 of the fault suite): a follow-up while the delegate
// runs on another process is refused `agent_busy`, as it is on the delegate's own process — whichever process
// drives the parent's turn gives the same answer — and the delegate's callback, owed from an earlier detached turn,
// reaches the parent exactly once after its process crashes; a parent turn handed over (graceful stop) while it
// waits on a follow-up finds that same follow-up again when re-driven, rather than being refused by it.
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
// The delegate's `exec` waits on an approval: it stays in flight, with no timing, until the test approves it.
const config = { agents: [{ id: 'main' }, { id: 'researcher', tools: { exec: 'ask' } }], webhooks: { allowPrivateNetwork: true } };
const newSchema = () => `t_dcb_${crypto.randomBytes(4).toString('hex')}`;
const tool = (name: string, args: unknown) => `/tool ${name} ${JSON.stringify(args)}`;

type Started = { runId: string; status: string };

async function history(s: TestServer, key: string): Promise<any[]> {
  return (await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: key, limit: 200, includeTools: true })).messages;
}

const runsOf = (s: TestServer, key: string) => s.rt.store.db.selectFrom('runs').select(['id', 'status']).where('session_key', '=', key).execute();

/** D1 is approved and ends ok: its callback reaches the parent exactly once. */
async function approveAndCheck(s: TestServer, parent: string, conv: string, d1: string) {
  const approval = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: conv })).approvals[0], 30_000);
  await s.rpc('approvals.resolve', { approvalId: approval.approvalId, decision: 'allow_once' });
  expect(await s.rpc('agent.wait', { runId: d1, timeoutMs: 60_000 })).toMatchObject({ status: 'ok' });
  const callbacks = await until(async () => {
    const rows = (await history(s, parent)).filter((m) => m.kind === 'agent_callback_result');
    return rows.length ? rows : null;
  }, 60_000);
  const row = await s.rt.store.db.selectFrom('callbacks').selectAll().where('target_run_id', '=', d1).execute();
  expect(row).toHaveLength(1);
  expect(callbacks).toHaveLength(1);
  expect(callbacks[0].content).toContain('exec');
}

describe('a delegate’s follow-ups across processes (PostgreSQL)', () => {
  it('a follow-up from another process while the detached delegate waits on its approval is refused agent_busy; its callback reaches the parent once after its process crashes', async () => {
    const schema = newSchema();
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    try {
      const parent = 'agent:main:dcb-busy';
      // A's turn starts a detached delegate D1, paused on an approval in A.
      const r1 = await a.rpc<Started>('agent', { sessionKey: parent, message: tool('delegate_agent', { agent_id: 'researcher', mode: 'detached', prompt: tool('exec', { command: 'echo d1' }) }) });
      expect(await a.rpc('agent.wait', { runId: r1.runId, timeoutMs: 30_000 })).toMatchObject({ status: 'ok' });
      const conv = (await a.rpc<{ sessions: any[] }>('delegates.list', { sessionKey: parent })).sessions[0].conversation_id as string;
      await until(async () => (await a.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: conv })).approvals[0], 30_000);
      const [d1] = await runsOf(a, conv);
      expect(a.rt.orchestrator.isActive(conv)).toBe(true);
      // B's turn (B starts it: the parent's lease went with r1's end) follows the delegate up while D1 is in flight in A.
      const r2 = await b.rpc<Started>('agent', { sessionKey: parent, message: tool('delegate_agent', { conversation_id: conv, prompt: '/reply fu' }) });
      expect(r2.status).toBe('started');
      expect(await b.rpc('agent.wait', { runId: r2.runId, timeoutMs: 30_000 })).toMatchObject({ status: 'ok' });
      const results = (await history(b, parent)).filter((m) => m.kind === 'tool_result' && m.runId === r2.runId);
      expect(results).toHaveLength(1);
      expect(results[0].tool.result).toEqual({ status: 'error', error: { code: 'agent_busy', message: 'delegate still running' } });
      expect(await runsOf(b, conv)).toEqual([d1]);
      // B lists it running too, as A does.
      expect((await b.rpc<{ sessions: any[] }>('delegates.list', { sessionKey: parent })).sessions[0].status).toBe('running');
      // A dies: B takes the conversation over, D1 paused on its approval; approved, its callback comes once.
      await a.crash();
      const ob = b.rt.orchestrator as any;
      await until(() => ob.sessions.get(conv)?.active?.id === d1!.id && !ob.sessions.get(conv)?.loading, 30_000);
      await approveAndCheck(b, parent, conv, d1!.id);
    } finally {
      await b.close();
    }
  }, 240_000);

  it('a parent turn stopped (graceful stop) while it waits on a follow-up finds that follow-up again when re-driven, not refused by it', async () => {
    const schema = newSchema();
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    let c: TestServer | null = null;
    let bOpen = true;
    try {
      const parent = 'agent:main:dcb-stop';
      const r1 = await a.rpc<Started>('agent', { sessionKey: parent, message: tool('delegate_agent', { agent_id: 'researcher', prompt: '/reply d0' }) });
      expect(await a.rpc('agent.wait', { runId: r1.runId, timeoutMs: 30_000 })).toMatchObject({ status: 'ok' });
      const conv = (await a.rpc<{ sessions: any[] }>('delegates.list', { sessionKey: parent })).sessions[0].conversation_id as string;
      // B's turn follows the idle delegate up; the follow-up F pauses on an approval while the turn waits on it.
      const r2 = await b.rpc<Started>('agent', { sessionKey: parent, message: tool('delegate_agent', { conversation_id: conv, prompt: tool('exec', { command: 'echo fu' }) }) });
      await until(async () => (await b.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: conv })).approvals[0], 30_000);
      // The run's waiting_approval mark follows its approval row by a statement: wait for the mark too.
      const f = await until(async () => (await runsOf(b, conv)).find((r) => r.status === 'waiting_approval'), 30_000);
      // B is SIGTERM'd (no grace): its turn waiting on F is stopped for a re-drive, and F is handed over, not aborted.
      await b.rt.orchestrator.shutdown({ graceMs: 0 });
      expect((await b.rt.store.getRun(f.id))?.status).toBe('waiting_approval');
      await b.close();
      bOpen = false;
      c = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
      const approval = await until(async () => (await c!.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: conv })).approvals[0], 30_000);
      await c.rpc('approvals.resolve', { approvalId: approval.approvalId, decision: 'allow_once' });
      // The parent's turn, re-driven in C, makes the same call: it waits for F (its run id derives from the call).
      expect(await c.rpc('agent.wait', { runId: f.id, timeoutMs: 60_000 })).toMatchObject({ status: 'ok' });
      expect(await c.rpc('agent.wait', { runId: r2.runId, timeoutMs: 60_000 })).toMatchObject({ status: 'ok' });
      const done = (await history(c, parent)).filter((m) => m.kind === 'delegate_follow_up_completed');
      expect(done).toHaveLength(1);
      expect(done[0].meta).toMatchObject({ run_id: f.id, status: 'ok' });
      expect(await runsOf(c, conv)).toHaveLength(2);
      expect((await history(c, conv)).filter((m) => m.role === 'user' && m.content === tool('exec', { command: 'echo fu' }))).toHaveLength(1);
    } finally {
      if (bOpen) await b.close();
      await c?.close();
      await a.close();
    }
  }, 240_000);
});
