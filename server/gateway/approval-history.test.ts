// approvals.history (CONTRACT §3): every decision with who made it and where — a person over JSON-RPC and in the room
// (tRPC), an allow_always rule's own entry — newest first, paged by an opaque cursor; on either store (TEST_STORE).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { createCaller } from '../trpc/root';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ config: { agents: [{ id: 'main', tools: { exec: 'ask' } }] } });
});
afterAll(async () => {
  await s?.close();
});

type Rec = { approvalId: string; sessionKey: string; runId: string; kind: string; tool: string; decision: string; decidedBy: { type: string; id?: string }; reason?: string; requestedAt: string; decidedAt: string };
const history = (p: Record<string, unknown> = {}) => s.rpc<{ approvals: Rec[]; next_cursor: string | null }>('approvals.history', p);

async function ask(key: string, command: string) {
  const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: `/tool exec {"command": "${command}"}` });
  return { runId, wait: () => s.rpc<{ status: string }>('agent.wait', { runId }) };
}
const pendingIn = (key: string) => until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals[0]);

describe('approvals.history', () => {
  it('records a JSON-RPC decision as the user\'s (id jsonrpc), then an allow_always rule\'s own entry, newest first', async () => {
    const key = 'agent:main:hist-rule';
    const first = await ask(key, 'echo one');
    const p = await pendingIn(key);
    await s.rpc('approvals.resolve', { approvalId: p.approvalId, decision: 'allow_always', reason: 'fine by me' });
    expect((await first.wait()).status).toBe('ok');
    // The rule allows the next call without asking: it still gets an entry, decided by the rule.
    const second = await ask(key, 'echo two');
    expect((await second.wait()).status).toBe('ok');

    const h = await history({ sessionKey: key });
    expect(h.next_cursor).toBeNull();
    expect(h.approvals).toHaveLength(2);
    const [rule, user] = h.approvals;
    expect(user).toEqual({
      approvalId: p.approvalId, sessionKey: key, runId: first.runId, kind: 'tool', tool: 'exec', decision: 'allow_always',
      decidedBy: { type: 'user', id: 'jsonrpc' }, reason: 'fine by me', requestedAt: p.requestedAt, decidedAt: expect.any(String),
    });
    expect(rule).toMatchObject({ sessionKey: key, runId: second.runId, kind: 'tool', tool: 'exec', decision: 'allow_always', decidedBy: { type: 'rule' } });
    expect(rule!.approvalId).not.toBe(p.approvalId);
    expect(Date.parse(rule!.decidedAt)).toBeGreaterThanOrEqual(Date.parse(user!.decidedAt));
    // The rule's entry is not a pending item anywhere.
    expect((await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals).toEqual([]);
  });

  it('records a decision in the room (tRPC) with where it was made: the row or the Approvals dialog', async () => {
    const caller = createCaller({ runtime: s.rt, authorized: true } as never);
    const key = 'agent:main:hist-room';
    const a = await ask(key, 'echo room');
    const p = await pendingIn(key);
    await caller.approvals.resolve({ approvalId: p.approvalId, decision: 'deny', reason: 'not now', via: 'inbox' });
    expect((await a.wait()).status).toBe('ok');
    const b = await ask(key, 'echo row');
    const q = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals.find((x) => x.approvalId !== p.approvalId));
    await caller.approvals.resolve({ approvalId: q.approvalId, decision: 'allow_once' });
    expect((await b.wait()).status).toBe('ok');
    const h = await caller.approvals.history({ sessionKey: key });
    expect(h.approvals.map((r) => [r.approvalId, r.decision, r.decidedBy])).toEqual([
      [q.approvalId, 'allow_once', { type: 'user', id: 'room' }],
      [p.approvalId, 'deny', { type: 'user', id: 'inbox' }],
    ]);
  });

  it('leaves out an item its run\'s end closed: no one decided it', async () => {
    const key = 'agent:main:hist-cancel';
    const a = await ask(key, 'echo never');
    await pendingIn(key);
    await s.rpc('agent.cancel', { runId: a.runId });
    expect((await a.wait()).status).toBe('error');
    const row = await until(async () => (await s.rt.store.db.selectFrom('approvals').selectAll().where('session_key', '=', key).execute()).find((r) => r.status !== 'pending'));
    expect(row.status).toBe('cancelled');
    expect((await history({ sessionKey: key })).approvals).toEqual([]);
  });

  it('pages newest first with next_cursor, never repeating or skipping; a bad or foreign cursor is invalid_cursor', async () => {
    const key = 'agent:main:hist-page';
    for (const n of [1, 2, 3]) {
      const r = await ask(key, `echo page${n}`);
      const p = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals[0]);
      await s.rpc('approvals.resolve', { approvalId: p.approvalId, decision: n === 2 ? 'deny' : 'allow_once' });
      await r.wait();
    }
    const all = (await history({ sessionKey: key })).approvals;
    expect(all.map((r) => r.decision)).toEqual(['allow_once', 'deny', 'allow_once']);
    const seen: string[] = [];
    let cursor: string | null | undefined;
    do {
      const page = await history({ sessionKey: key, limit: 1, ...(cursor ? { cursor } : {}) });
      expect(page.approvals.length).toBeLessThanOrEqual(1);
      seen.push(...page.approvals.map((r) => r.approvalId));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual(all.map((r) => r.approvalId));
    // Every session's, too: this session's three are among them in the same order.
    const global = (await history({ limit: 200 })).approvals.map((r) => r.approvalId).filter((id) => seen.includes(id));
    expect(global).toEqual(seen);

    const first = await history({ sessionKey: key, limit: 1 });
    for (const cursor of ['nope', first.next_cursor!.slice(0, -3) + 'xyz']) {
      const bad = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'approvals.history', params: { sessionKey: key, cursor } });
      expect(bad.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_cursor' } });
    }
    // A cursor of this session's list does not page another session's (nor every session's).
    const foreign = await s.rpcRaw({ jsonrpc: '2.0', id: 2, method: 'approvals.history', params: { cursor: first.next_cursor } });
    expect(foreign.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_cursor' } });
    const badLimit = await s.rpcRaw({ jsonrpc: '2.0', id: 3, method: 'approvals.history', params: { limit: 0 } });
    expect(badLimit.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request' } });
  });
});
