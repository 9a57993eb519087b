// Budgets (CONTRACT §5): a request tree past its root agent's cap waits on one `budget` item before its next model
// step; allow_once grants one more cap (the next pause at twice it), allow_always lifts it, deny ends it budget_exceeded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { Budgets } from './budget';

let s: TestServer;
beforeAll(async () => {
  // A 1-token cap: the first model step of a tree runs (nothing spent yet), every later one needs a decision.
  s = await startTestServer({ config: { agents: [{ id: 'main', budget: { tokens: 1 } }, { id: 'researcher' }, { id: 'writer' }] } });
});
afterAll(async () => {
  await s?.close();
});

interface Item {
  approvalId: string;
  kind: string;
  sessionKey: string;
  runId: string;
  tool: string;
  args: { spentUsd: number; capUsd: number | null; spentTokens: number; capTokens: number | null; rootRunId: string };
  parentChain: string[];
}
const budgetItems = async () => (await s.rpc<{ approvals: Item[] }>('approvals.list', {})).approvals.filter((a) => a.kind === 'budget');
const nextItem = async (skip: string[] = []): Promise<Item> => {
  for (let i = 0; i < 400; i++) {
    const found = (await budgetItems()).find((a) => !skip.includes(a.approvalId));
    if (found) return found;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('no budget item');
};

describe('budgets', () => {
  it('deny ends the run error budget_exceeded', async () => {
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:budget-deny', message: '/tool sessions_list {}' });
    const item = await nextItem();
    expect(item).toMatchObject({ kind: 'budget', sessionKey: 'agent:main:budget-deny', runId, tool: 'budget', parentChain: ['agent:main:budget-deny'] });
    expect(item.args).toMatchObject({ capTokens: 1, capUsd: null, rootRunId: runId });
    expect(item.args.spentTokens).toBeGreaterThan(1);
    await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'deny' });
    expect(await s.rpc('agent.wait', { runId, timeoutMs: 10_000 })).toMatchObject({ status: 'error', error: 'budget_exceeded' });
    expect(await budgetItems()).toEqual([]);
  });

  it('allow_once grants one more cap, so the next pause comes at twice it; allow_always lifts it', async () => {
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:budget-allow', message: '/tool sessions_list {}' });
    const first = await nextItem();
    expect(first.args.capTokens).toBe(1);
    await s.rpc('approvals.resolve', { approvalId: first.approvalId, decision: 'allow_once' });
    const second = await nextItem([first.approvalId]);
    expect(second.args).toMatchObject({ capTokens: 2, rootRunId: runId });
    // The board holds the tree to the same raised cap as the item (it showed the agent's own cap, probe F).
    const onBoard = (await s.rpc<{ needsInput: any[] }>('runs.board', {})).needsInput.find((b) => b.runId === runId);
    expect(onBoard.budget).toMatchObject({ rootRunId: runId, capTokens: 2, capUsd: null });
    const again = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'approvals.resolve', params: { approvalId: first.approvalId, decision: 'allow_once' } });
    expect(again.body.error.data.code).toBe('already_resolved');
    await s.rpc('approvals.resolve', { approvalId: second.approvalId, decision: 'allow_always' });
    expect(await s.rpc('agent.wait', { runId, timeoutMs: 10_000 })).toMatchObject({ status: 'ok' });
    // Allowed for good: no cap holds it any more.
    const done = (await s.rpc<{ done: any[] }>('runs.board', {})).done.find((b) => b.runId === runId);
    expect(done.budget).toMatchObject({ rootRunId: runId, capTokens: null, capUsd: null });
  });

  it('the tree is one: delegates spend from their caller’s budget, and wait on one item', async () => {
    const batch = { batch: [{ agent_id: 'researcher', prompt: '/reply from a' }, { agent_id: 'writer', prompt: '/reply from b' }] };
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:budget-tree', message: `/tool delegate_agent ${JSON.stringify(batch)}` });
    const item = await nextItem();
    expect(item.args.rootRunId).toBe(runId);
    expect(item.sessionKey).toMatch(/^agent:(researcher|writer):subagent:/);
    expect(item.parentChain[0]).toBe('agent:main:budget-tree');
    // Both delegates have reached the cap by now (or will): still one item for the tree.
    await new Promise((r) => setTimeout(r, 300));
    expect((await budgetItems()).map((a) => a.approvalId)).toEqual([item.approvalId]);
    // On the board every run of the tree needs input, waiting on that one item (not only the run that raised it).
    const board = await s.rpc<{ needsInput: any[]; working: any[] }>('runs.board', {});
    const tree = (items: any[]) => items.filter((b) => b.parentChain.includes('agent:main:budget-tree'));
    expect(tree(board.working)).toEqual([]);
    expect(tree(board.needsInput).length).toBe(3); // the caller waiting on its two delegates, and both delegates
    for (const b of tree(board.needsInput)) expect(b).toMatchObject({ status: 'waiting_approval', waitingFor: 'approval', approvalId: item.approvalId });
    await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'allow_always' });
    const w = await s.rpc<{ status: string; response: string }>('agent.wait', { runId, timeoutMs: 15_000 });
    expect(w.status).toBe('ok');
    expect(w.response).toContain('from a');
    expect(w.response).toContain('from b');
    // Another agent's tree has no cap.
    const free = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:writer:budget-free', message: '/tool sessions_list {}' });
    expect(await s.rpc('agent.wait', { runId: free.runId, timeoutMs: 10_000 })).toMatchObject({ status: 'ok' });
  });

  it('the item goes when no run of its tree is left: not when the delegate holding it is cancelled, when the root is', async () => {
    const key = 'agent:main:budget-cancel';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: `/tool delegate_agent ${JSON.stringify({ agent_id: 'researcher', prompt: '/tool sessions_list {}' })}` });
    const ofTree = async () => (await budgetItems()).filter((a) => a.args.rootRunId === runId);
    let item: Item | undefined;
    for (let i = 0; i < 400 && !item; i++) item = (await ofTree())[0] ?? (await new Promise((r) => setTimeout(r, 25)), undefined);
    expect(item?.sessionKey).toMatch(/^agent:researcher:subagent:/);
    // The delegate that raised it is cancelled: its caller goes on to its next step and waits on the same item.
    await s.rpc('agent.cancel', { runId: item!.runId });
    expect(await s.rpc('agent.wait', { runId: item!.runId, timeoutMs: 10_000 })).toMatchObject({ status: 'error', error: 'cancelled' });
    await new Promise((r) => setTimeout(r, 300));
    expect((await ofTree()).map((a) => a.approvalId)).toEqual([item!.approvalId]);
    // The root is cancelled: nothing of the tree is left to wait on it, so it is no longer pending.
    await s.rpc('agent.cancel', { runId });
    expect(await s.rpc('agent.wait', { runId, timeoutMs: 10_000 })).toMatchObject({ status: 'error', error: 'cancelled' });
    for (let i = 0; i < 200 && (await ofTree()).length; i++) await new Promise((r) => setTimeout(r, 25));
    expect(await ofTree()).toEqual([]);
    const again = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'approvals.resolve', params: { approvalId: item!.approvalId, decision: 'allow_once' } });
    expect(again.body.error.data.code).toBe('already_resolved');
    // Closed by its tree's end, decided by no one: not in the decision log (as a cancelled run's tool item).
    const history = await s.rpc<{ approvals: { approvalId: string }[] }>('approvals.history', { sessionKey: item!.sessionKey });
    expect(history.approvals.map((h) => h.approvalId)).not.toContain(item!.approvalId);
    expect((await s.rpc<{ pendingApprovals: number }>('status', {})).pendingApprovals).toBe(0);
  });

  it('pauses when the spend passes the cap, not when it reaches it (CONTRACT §5 "passes")', async () => {
    const agent = { id: 'capped', budget: { tokens: 100, usd: 0.5 } } as const;
    const budgets = new Budgets({ store: s.rt.store, bus: s.rt.bus, agent: (id) => (id === 'capped' ? (agent as never) : undefined) });
    const spend = (root: string, tokens: number, usd: number) =>
      s.rt.store.db
        .insertInto('model_usage')
        .values({ run_id: root, session_key: 'agent:capped:main', agent_id: 'capped', model: 'scripted', kind: 'step', input_tokens: tokens, output_tokens: 0, cached_tokens: 0, cost_usd: usd, priced: 1, root_run_id: root, created_at: new Date().toISOString() })
        .execute();
    const run = (root: string) => ({ id: root, sessionKey: 'agent:capped:main', agent: agent as never });
    // Spent exactly the caps: the next step goes on, no item.
    await spend('run_cap_equal', 100, 0.5);
    await budgets.beforeStep(run('run_cap_equal'), new AbortController().signal);
    expect(await budgetItems()).toEqual([]);
    // One token past the cap: the step waits on the tree's item (cancelled here by the signal).
    await spend('run_cap_past', 101, 0);
    const stop = new AbortController();
    const waiting = budgets.beforeStep(run('run_cap_past'), stop.signal).catch((e: Error) => e);
    const item = await nextItem();
    expect(item.args).toMatchObject({ spentTokens: 101, capTokens: 100, rootRunId: 'run_cap_past' });
    stop.abort();
    await waiting;
  });

  it('a run of the tree that comes after its item was closed (no run left to wait on it) asks again, and waits', async () => {
    const agent = { id: 'capped', budget: { tokens: 10 } } as const;
    const budgets = new Budgets({ store: s.rt.store, bus: s.rt.bus, agent: (id) => (id === 'capped' ? (agent as never) : undefined) });
    await s.rt.store.db
      .insertInto('model_usage')
      .values({ run_id: 'run_cap_closed', session_key: 'agent:capped:main', agent_id: 'capped', model: 'scripted', kind: 'step', input_tokens: 11, output_tokens: 0, cached_tokens: 0, cost_usd: 0, priced: 1, root_run_id: 'run_cap_closed', created_at: new Date().toISOString() })
      .execute();
    const run = { id: 'run_cap_closed', sessionKey: 'agent:capped:main', agent: agent as never };
    const first = new AbortController();
    const waiting = budgets.beforeStep(run, first.signal).catch((e: Error) => e);
    const item = await until(async () => (await budgetItems()).find((a) => a.args.rootRunId === 'run_cap_closed'));
    first.abort();
    await waiting;
    // Closed as treeEnded closes it when no run of the tree is left.
    expect(await s.rt.store.settleApproval(item.approvalId, 'cancelled', 'cancel', 'no run of its tree is left')).toBeTruthy();
    // A later run of the same tree (a callback's, say) reaches the cap: a new pending item it waits on. Before: the
    // closed item was found again, answered at once, and the loop went round reading the store without waiting.
    const reads = { n: 0 };
    const get = s.rt.store.getApproval.bind(s.rt.store);
    s.rt.store.getApproval = (id: string) => (reads.n++, get(id));
    const later = new AbortController();
    const again = budgets.beforeStep(run, later.signal).catch((e: Error) => e);
    try {
      const next = await until(async () => (await budgetItems()).find((a) => a.approvalId !== item.approvalId && a.args.rootRunId === 'run_cap_closed'));
      expect(next.approvalId).not.toBe(item.approvalId);
      await new Promise((r) => setTimeout(r, 300));
      expect(reads.n).toBeLessThan(20);
    } finally {
      s.rt.store.getApproval = get;
      later.abort();
      await again;
    }
  });
});
