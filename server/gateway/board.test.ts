// `runs.board` (CONTRACT §3): a tree of runs moves between the four groups as it starts, waits, finishes and fails.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness';
import type { Board, BoardItem } from './board';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

const board = (limit?: number) => s.rpc<Board>('runs.board', limit ? { limit } : {});
const until = async (what: string, ok: (b: Board) => boolean): Promise<Board> => {
  for (let i = 0; i < 400; i++) {
    const b = await board();
    if (ok(b)) return b;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`board never showed ${what}: ${JSON.stringify(await board())}`);
};
const has = (items: BoardItem[], runId: string) => items.some((i) => i.runId === runId);

describe('runs.board', () => {
  it('lists each group by the start it shows, newest first: a follow-up queued early and started late is above a later run', async () => {
    const first = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:writer:order-a', message: '/sleep 400\n/reply a1' });
    const queued = await s.rpc<{ runId: string; status: string }>('agent', { sessionKey: 'agent:writer:order-a', message: '/reply a2', queueMode: 'followup' });
    expect(queued.status).toBe('queued');
    await new Promise((r) => setTimeout(r, 50));
    const later = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:writer:order-b', message: '/reply b' });
    for (const r of [first, queued, later]) expect(await s.rpc('agent.wait', { runId: r.runId, timeoutMs: 10_000 })).toMatchObject({ status: 'ok' });
    const done = (await board()).done.filter((i) => [first.runId, queued.runId, later.runId].includes(i.runId));
    // Created first, first.runId and queued.runId; started last, queued.runId (after the first ended).
    expect(done.map((i) => i.runId)).toEqual([queued.runId, later.runId, first.runId]);
  });

  it('groups a delegate tree: waiting on an approval, working, done, failed', async () => {
    const exec = JSON.stringify({ command: 'echo from-the-delegate' }).replace(/"/g, '\\"');
    const parent = await s.rpc<{ runId: string }>('agent', {
      sessionKey: 'agent:main:main',
      message: `/tool delegate_agent {"agent_id":"researcher","prompt":"/tool exec ${exec}","mode":"detached"}`,
    });
    const slow = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:writer:slow', message: '/sleep 4000\n/reply slow' });
    const failed = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:writer:failing', message: '/fail boom' });
    const fine = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:writer:fine', message: '/reply fine' });

    // The parent's run ends after its detached delegate started (it may still be ending when the delegate waits): wait for both.
    const b = await until('the delegate waiting', (x) => x.needsInput.length === 1 && has(x.failed, failed.runId) && has(x.done, fine.runId) && has(x.done, parent.runId));
    const waiting = b.needsInput[0]!;
    expect(waiting).toMatchObject({ agentId: 'researcher', waitingFor: 'approval', tool: 'exec', costUsd: 0 });
    expect(waiting.parentChain[0]).toBe('agent:main:main');
    expect(waiting.parentChain.at(-1)).toBe(waiting.sessionKey);
    expect(waiting.sessionKey).toMatch(/^agent:researcher:subagent:/);
    expect(has(b.working, slow.runId)).toBe(true);
    expect(has(b.working, waiting.runId)).toBe(false); // one group per run
    expect(b.failed.find((i) => i.runId === failed.runId)).toMatchObject({ sessionKey: 'agent:writer:failing', agentId: 'writer', status: 'error', endedAt: expect.any(String) });
    expect(has(b.done, parent.runId)).toBe(true);

    const pending = await s.rpc<{ approvals: Array<{ approvalId: string; runId: string }> }>('approvals.list', {});
    expect(pending.approvals.map((a) => a.runId)).toEqual([waiting.runId]);
    expect(waiting.approvalId).toBe(pending.approvals[0]!.approvalId);
    await s.rpc('approvals.resolve', { approvalId: waiting.approvalId, decision: 'allow_once' });
    const after = await until('the delegate done', (x) => x.needsInput.length === 0 && has(x.done, waiting.runId));
    expect(after.done.find((i) => i.runId === waiting.runId)!.parentChain).toEqual(waiting.parentChain);

    await s.rpc('agent.cancel', { runId: slow.runId });
    const end = await until('the cancelled run failed', (x) => has(x.failed, slow.runId));
    expect(has(end.working, slow.runId)).toBe(false);
    // Newest first, and `limit` caps each group.
    expect((await board(1)).done).toHaveLength(1);
    const starts = end.done.map((i) => i.startedAt);
    expect([...starts].sort().reverse()).toEqual(starts);
  });

  it('orders without ICU collation: String.prototype.localeCompare is never called (its first use blocks the loop for ms)', async () => {
    const a = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:writer:order-icu', message: '/reply x' });
    await s.rpc('agent.wait', { runId: a.runId, timeoutMs: 10_000 });
    const spy = vi.spyOn(String.prototype, 'localeCompare');
    try {
      const b = await board();
      expect(has(b.done, a.runId)).toBe(true);
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  it('says a parent run waits on its delegate while the delegate waits for a person, and not after', async () => {
    const exec = JSON.stringify({ command: 'echo nested' }).replace(/"/g, '\\"');
    const parent = await s.rpc<{ runId: string }>('agent', {
      sessionKey: 'agent:main:board-parent',
      message: `/tool delegate_agent {"agent_id":"researcher","prompt":"/tool exec ${exec}"}`,
    });
    const b = await until('the standard delegate waiting', (x) => x.needsInput.some((i) => i.parentChain[0] === 'agent:main:board-parent'));
    const waiting = b.needsInput.find((i) => i.parentChain[0] === 'agent:main:board-parent')!;
    const above = b.working.find((i) => i.runId === parent.runId);
    expect(above).toMatchObject({ sessionKey: 'agent:main:board-parent', status: 'running', waitingFor: 'delegate', delegateSessionKey: waiting.sessionKey });
    // A run of another session is not marked.
    expect(b.working.filter((i) => i.waitingFor === 'delegate').map((i) => i.runId)).toEqual([parent.runId]);
    await s.rpc('approvals.resolve', { approvalId: waiting.approvalId, decision: 'allow_once' });
    expect(await s.rpc('agent.wait', { runId: parent.runId, timeoutMs: 10_000 })).toMatchObject({ status: 'ok' });
    const after = (await board()).done.find((i) => i.runId === parent.runId)!;
    expect(after.waitingFor).toBeUndefined();
  });

  it('does not say so of a run queued behind, nor of another run of the session whose detached delegate waits (probe K)', async () => {
    const key = 'agent:main:board-detached-parent';
    const exec = JSON.stringify({ command: 'echo detached' }).replace(/"/g, '\\"');
    const starter = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: `/tool delegate_agent {"agent_id":"researcher","prompt":"/tool exec ${exec}","mode":"detached"}` });
    await s.rpc('agent.wait', { runId: starter.runId, timeoutMs: 10_000 });
    await until('the detached delegate waiting', (x) => x.needsInput.some((i) => i.parentChain[0] === key));
    // A run of the same session that has nothing to do with that delegate, and one queued behind it.
    const other = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/sleep 1500\n/reply other' });
    const queued = await s.rpc<{ runId: string; status: string }>('agent', { sessionKey: key, message: '/reply later', queueMode: 'followup' });
    expect(queued.status).toBe('queued');
    const b = await until('both working', (x) => has(x.working, other.runId) && has(x.working, queued.runId));
    for (const id of [other.runId, queued.runId]) expect(b.working.find((i) => i.runId === id)!.waitingFor).toBeUndefined();
    for (const a of (await s.rpc<{ approvals: Array<{ approvalId: string; sessionKey: string }> }>('approvals.list', {})).approvals)
      if (a.sessionKey.startsWith('agent:researcher:subagent:')) await s.rpc('approvals.resolve', { approvalId: a.approvalId, decision: 'deny' });
    await s.rpc('agent.wait', { runId: queued.runId, timeoutMs: 10_000 });
  });

  it('leaves out a deleted session’s runs and dead deliveries (its archive key), on both stores, and no chain names one', async () => {
    const key = 'agent:main:board-deleted';
    const done = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply kept' });
    const failed = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:writer:board-deleted-f', message: '/fail gone' });
    // A delegate that outlives its deleted parent: still on the board, its chain starting at itself.
    const parent = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:board-deleted-parent', message: '/tool delegate_agent {"agent_id":"researcher","prompt":"/reply child"}' });
    for (const r of [done, failed, parent]) await s.rpc('agent.wait', { runId: r.runId, timeoutMs: 10_000 });
    const before = await until('the runs', (x) => has(x.done, done.runId) && has(x.failed, failed.runId) && has(x.done, parent.runId));
    const child = before.done.find((i) => i.parentChain[0] === 'agent:main:board-deleted-parent' && i.sessionKey !== 'agent:main:board-deleted-parent')!;
    expect(child.sessionKey).toMatch(/^agent:researcher:subagent:/);
    const now = new Date().toISOString();
    const dead = (id: string, from: string) => ({ id, kind: 'webhook', from_session: from, from_run: null, from_call: null, to_session: null, to_channel: null, to_target: null, to_url: 'http://127.0.0.1:9/x', state: 'dead', run_id: null, attempts: 1, error_code: 'channel_error', error_message: 'no', source: null, created_at: now, updated_at: now });
    await s.rt.store.db.insertInto('deliveries').values([dead('dl-board-deleted', key), dead('dl-board-live', 'agent:main:board-live')]).execute();
    for (const k of [key, 'agent:writer:board-deleted-f', 'agent:main:board-deleted-parent']) await s.rpc('sessions.delete', { sessionKey: k });

    const b = await board();
    const items = [...b.needsInput, ...b.working, ...b.done, ...b.failed];
    // Before: each under `<key>#deleted-<ms>` with agentId '' (the room opened a key no request can name: -32602).
    expect(items.filter((i) => i.sessionKey.includes('#') || i.parentChain.some((k) => k.includes('#'))).map((i) => i.sessionKey)).toEqual([]);
    for (const id of [done.runId, failed.runId, parent.runId]) expect(items.some((i) => i.runId === id)).toBe(false);
    expect(b.failed.some((i) => i.delivery?.deliveryId === 'dl-board-deleted')).toBe(false);
    expect(b.failed.find((i) => i.delivery?.deliveryId === 'dl-board-live')).toMatchObject({ sessionKey: 'agent:main:board-live', agentId: 'main', parentChain: ['agent:main:board-live'] });
    expect(b.done.find((i) => i.runId === child.runId)).toMatchObject({ sessionKey: child.sessionKey, agentId: 'researcher', parentChain: [child.sessionKey] });
    // The same key used again is a new session: its runs are on the board.
    const again = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply new' });
    await s.rpc('agent.wait', { runId: again.runId, timeoutMs: 10_000 });
    expect((await board()).done.find((i) => i.runId === again.runId)).toMatchObject({ sessionKey: key, agentId: 'main', parentChain: [key] });
  });

  it('refuses a bad limit', async () => {
    const r = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'runs.board', params: { limit: 0 } });
    expect(r.body.error.code).toBe(-32602);
  });
});
