// A detached delegate's callback survives its parent session's later turns being interrupted or handed over
// (PostgreSQL; seed 4 of the fault suite): a parent that stops waiting on a standard follow-up touches that
// follow-up only, never the run ahead of it in the delegate's conversation (a detached delegate from an earlier
// turn, taken over from a crashed process), and a graceful stop hands the follow-up over rather than abort it.
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

/**
 * A's turn in `parent` starts a detached delegate D1 (paused on an approval, in A); B's next turn in `parent` sends
 * a standard follow-up F to D1's conversation (queued behind D1, B waits for it); A crashes and B takes D1's
 * conversation over (D1 ahead of F). Returns what the test needs to go on.
 */
async function setUp(a: TestServer, b: TestServer, parent: string) {
  const r1 = await a.rpc<Started>('agent', { sessionKey: parent, message: tool('delegate_agent', { agent_id: 'researcher', mode: 'detached', prompt: tool('exec', { command: 'echo d1' }) }) });
  expect(await a.rpc('agent.wait', { runId: r1.runId, timeoutMs: 30_000 })).toMatchObject({ status: 'ok' });
  const conv = (await a.rpc<{ sessions: any[] }>('delegates.list', { sessionKey: parent })).sessions[0].conversation_id as string;
  const d1 = (await a.rt.store.db.selectFrom('runs').select('id').where('session_key', '=', conv).executeTakeFirstOrThrow()).id;
  await until(async () => (await a.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: conv })).approvals[0], 30_000);
  // B's turn: a standard follow-up to the same conversation; B does not drive it, so it is queued behind D1.
  const r2 = await b.rpc<Started>('agent', { sessionKey: parent, message: tool('delegate_agent', { conversation_id: conv, prompt: '/reply fu' }) });
  const f = await until(async () => (await b.rt.store.db.selectFrom('runs').select(['id', 'status']).where('session_key', '=', conv).where('id', '<>', d1).executeTakeFirst()) ?? null, 30_000);
  expect(f.status).toBe('queued');
  // A dies: B takes the conversation over, D1 (paused on its approval) ahead of F.
  await a.crash();
  const ob = b.rt.orchestrator as any;
  await until(() => ob.sessions.get(conv)?.active?.id === d1 && !ob.sessions.get(conv)?.loading, 30_000);
  return { conv, d1, f: f.id as string, parentRun: r2.runId };
}

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

describe('a detached delegate’s callback is never lost to a later turn of its parent (PostgreSQL)', () => {
  it('the parent interrupted while it waits on a follow-up cancels that follow-up only, not the detached delegate ahead of it', async () => {
    const schema = newSchema();
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    try {
      const parent = 'agent:main:dcb-interrupt';
      const { conv, d1, f, parentRun } = await setUp(a, b, parent);
      // A message in `interrupt` mode aborts B's turn while its tool waits on F.
      const r3 = await b.rpc<Started>('agent', { sessionKey: parent, message: '/reply stop', queueMode: 'interrupt' });
      expect(await b.rpc('agent.wait', { runId: parentRun, timeoutMs: 30_000 })).toMatchObject({ status: 'error', error: 'run interrupted' });
      expect(await b.rpc('agent.wait', { runId: r3.runId, timeoutMs: 30_000 })).toMatchObject({ status: 'ok' });
      // D1 goes on, paused on its approval; the follow-up the turn waited for is cancelled.
      expect((await b.rt.store.getRun(d1))?.status).toBe('waiting_approval');
      expect(await b.rpc('agent.wait', { runId: f, timeoutMs: 30_000 })).toMatchObject({ status: 'error', error: 'cancelled' });
      await approveAndCheck(b, parent, conv, d1);
    } finally {
      await b.close();
    }
  }, 240_000);

  it('a graceful stop while the parent waits on a follow-up hands both over: the detached delegate ahead of it is not aborted', async () => {
    const schema = newSchema();
    const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
    let c: TestServer | null = null;
    let bOpen = true;
    try {
      const parent = 'agent:main:dcb-stop';
      const { conv, d1, f, parentRun } = await setUp(a, b, parent);
      // B is SIGTERM'd (no grace): its turn waiting on F is stopped for a re-drive, and its sessions are let go.
      await b.rt.orchestrator.shutdown({ graceMs: 0 });
      expect((await b.rt.store.getRun(d1))?.status).toBe('waiting_approval');
      await b.close();
      bOpen = false;
      c = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config });
      await approveAndCheck(c, parent, conv, d1);
      // The parent's turn, re-driven in C, waits for the same follow-up (its run id derives from the call): both ok.
      expect(await c.rpc('agent.wait', { runId: f, timeoutMs: 60_000 })).toMatchObject({ status: 'ok', response: 'fu' });
      expect(await c.rpc('agent.wait', { runId: parentRun, timeoutMs: 60_000 })).toMatchObject({ status: 'ok' });
      expect((await history(c, conv)).filter((m) => m.role === 'user' && m.content === '/reply fu')).toHaveLength(1);
    } finally {
      if (bOpen) await b.close();
      await c?.close();
    }
  }, 240_000);
});
