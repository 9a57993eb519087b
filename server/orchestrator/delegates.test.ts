// Delegates you can come back to (issue 4): standard/detached/batch, follow-ups, delegate_sessions, limits, previews.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, tmpDataDir, type TestServer, until } from '../testing/harness';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({
    config: { agents: [{ id: 'main' }, { id: 'researcher', limits: { maxDelegateDepth: 1 } }, { id: 'writer' }, { id: 'solo', limits: { maxDelegatesPerParent: 1 } }, { id: 'runner', tools: { exec: 'auto' } }] },
  });
});
afterAll(async () => {
  await s?.close();
});

const tool = (name: string, args: unknown) => `/tool ${name} ${JSON.stringify(args)}`;
async function call(sessionKey: string, name: string, args: unknown): Promise<any> {
  const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey, message: tool(name, args) });
  const w = await s.rpc<{ status: string; response: string }>('agent.wait', { runId });
  expect(w.status).toBe('ok');
  return JSON.parse(w.response.slice(name.length + 2));
}
const hist = async (sessionKey: string) => (await s.rpc<{ messages: any[] }>('chat.history', { sessionKey, limit: 200 })).messages.reverse();

describe('delegate_agent', () => {
  it('standard: the delegate response is the tool result; a follow-up reuses the same session with a new run_id', async () => {
    const parent = 'agent:main:deleg';
    const first = await call(parent, 'delegate_agent', { agent_id: 'researcher', prompt: '/reply found it' });
    expect(first).toMatchObject({ status: 'ok', agent_id: 'researcher', response: 'found it', run_id: expect.stringMatching(/^run_/) });
    expect(first.conversation_id).toMatch(/^agent:researcher:subagent:[a-z0-9]+$/);
    const sessionsBefore = (await s.rpc<{ sessions: any[] }>('sessions.list', { limit: 200 })).sessions.length;

    const again = await call(parent, 'delegate_agent', { conversation_id: first.conversation_id, prompt: '/reply more' });
    expect(again).toMatchObject({ status: 'ok', conversation_id: first.conversation_id, agent_id: 'researcher', response: 'more' });
    expect(again.run_id).not.toBe(first.run_id);
    expect((await s.rpc<{ sessions: any[] }>('sessions.list', { limit: 200 })).sessions.length).toBe(sessionsBefore);
    const delegateRows = await hist(first.conversation_id);
    expect(delegateRows.map((m) => m.content)).toEqual(['/reply found it', 'found it', '/reply more', 'more']);
    expect(delegateRows[0]).toMatchObject({ kind: 'inter_session', author: { type: 'agent', id: 'main' } });

    const parentRows = await hist(parent);
    const started = parentRows.find((m) => m.kind === 'delegate_follow_up_started');
    const completed = parentRows.find((m) => m.kind === 'delegate_follow_up_completed');
    expect(started).toMatchObject({ content: '/reply more', meta: { conversation_id: first.conversation_id, run_id: again.run_id } });
    expect(completed).toMatchObject({ content: 'more', meta: { conversation_id: first.conversation_id, label: '(follow-up)' } });
    const summary = (await s.rpc<{ sessions: any[] }>('sessions.list', { kind: 'subagent', limit: 200 })).sessions.find((x) => x.sessionKey === first.conversation_id);
    expect(summary).toMatchObject({ kind: 'subagent', agentId: 'researcher' });
    // The room's richer summary (tRPC, same service) knows the parent and the depth.
    const rich = (await s.rt.gateway.sessionsList({ kind: 'subagent', limit: 200 })).sessions.find((x) => x.sessionKey === first.conversation_id);
    expect(rich).toMatchObject({ parentKey: parent, spawnDepth: 1 });
  });

  it('detached: accepted at once, then a callback row with the delegate response and a callback turn', async () => {
    const parent = 'agent:main:detached';
    const r = await call(parent, 'delegate_agent', { agent_id: 'writer', prompt: '/sleep 50\n/reply drafted', mode: 'detached' });
    expect(r).toMatchObject({ status: 'accepted', agent_id: 'writer', conversation_id: expect.stringMatching(/^agent:writer:subagent:/) });
    const rows = await until(async () => {
      const h = await hist(parent);
      return h.some((m) => m.content === 'echo: drafted') ? h : null;
    });
    const cb = rows.find((m) => m.kind === 'agent_callback_result');
    expect(cb).toMatchObject({ content: 'drafted', meta: { delegate: { conversation_id: r.conversation_id, followUp: false } } });
  });

  it("a delegate's cwd is where its exec runs (inside the agent's workspace)", async () => {
    const r = await call('agent:main:cwd', 'delegate_agent', { agent_id: 'runner', prompt: tool('exec', { command: 'pwd' }), cwd: 'projects/alpha' });
    expect(r.status).toBe('ok');
    const out = JSON.parse(r.response.replace(/^exec: /, ''));
    expect(out.stdout.trim()).toBe(path.join(s.rt.config.agents.find((a) => a.id === 'runner')!.workspace, 'projects/alpha'));
    const escape = await call('agent:main:cwd', 'delegate_agent', { agent_id: 'runner', prompt: tool('exec', { command: 'pwd' }), cwd: '../../etc' });
    expect(JSON.parse(escape.response.replace(/^exec: /, ''))).toMatchObject({ status: 'error', error: { code: 'forbidden' } });
    const listed = await call('agent:main:cwd', 'delegate_sessions', { operation: 'list' });
    expect(listed.sessions.map((x: any) => x.cwd).sort()).toEqual(['../../etc', 'projects/alpha']);
  });

  it('batch runs several delegates in parallel', async () => {
    const r = await call('agent:main:batch', 'delegate_agent', { batch: [{ agent_id: 'researcher', prompt: '/reply a' }, { agent_id: 'writer', prompt: '/reply b' }] });
    expect(r.status).toBe('ok');
    expect(r.runs.map((x: any) => [x.agent_id, x.response])).toEqual([
      ['researcher', 'a'],
      ['writer', 'b'],
    ]);
    expect(new Set(r.runs.map((x: any) => x.conversation_id)).size).toBe(2);
  });

  it('a follow-up while the delegate runs gets agent_busy "delegate still running"; once ready it is accepted', async () => {
    const parent = 'agent:main:busy';
    const d = await call(parent, 'delegate_agent', { agent_id: 'researcher', prompt: '/sleep 2000\n/reply slow', mode: 'detached' });
    const busy = await call(parent, 'delegate_agent', { conversation_id: d.conversation_id, prompt: 'again' });
    expect(busy).toEqual({ status: 'error', error: { code: 'agent_busy', message: 'delegate still running' } });
    // the callback turn has run (the parent is idle again), then the delegate takes a follow-up
    await until(async () => (await hist(parent)).some((m) => m.content === 'echo: slow'), 6000);
    expect(await call(parent, 'delegate_agent', { conversation_id: d.conversation_id, prompt: '/reply ready' })).toMatchObject({ status: 'ok', response: 'ready' });
  });
});

describe('follow-ups in one step', () => {
  it('two follow-ups to one delegate in the same model step: one is accepted, the other gets agent_busy', async () => {
    const parent = 'agent:main:two-follow-ups';
    const d = await call(parent, 'delegate_agent', { agent_id: 'researcher', prompt: '/reply first' });
    const both = [tool('delegate_agent', { conversation_id: d.conversation_id, prompt: '/sleep 300\n/reply A', mode: 'detached' }), tool('delegate_agent', { conversation_id: d.conversation_id, prompt: '/reply B', mode: 'detached' })].join('\n');
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: parent, message: both });
    const w = await s.rpc<{ status: string; response: string }>('agent.wait', { runId });
    const results = w.response.split('\n').map((l) => JSON.parse(l.slice('delegate_agent: '.length)));
    expect(results.map((r) => r.status).sort()).toEqual(['accepted', 'error']);
    expect(results.find((r) => r.status === 'error')).toEqual({ status: 'error', error: { code: 'agent_busy', message: 'delegate still running' } });
  });
});

describe('attention', () => {
  it("a delegate's pending approval marks its parent session in sessions.list", async () => {
    const parent = 'agent:main:attention';
    const d = await call(parent, 'delegate_agent', { agent_id: 'writer', prompt: tool('exec', { command: 'echo from-delegate' }), mode: 'detached' });
    const approval = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: d.conversation_id })).approvals[0]);
    // JSON-RPC: the parent's list holds its delegate's item too (CONTRACT §4), with the delegate's key and chain; the
    // room's per-session list (its toolbox, tRPC) keeps to the session's own calls.
    expect((await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: parent })).approvals).toEqual([
      expect.objectContaining({ approvalId: approval.approvalId, sessionKey: d.conversation_id, parentChain: [parent, d.conversation_id] }),
    ]);
    expect((await s.rt.gateway.approvalsList({ sessionKey: parent }, { own: true })).approvals).toEqual([]);
    expect((await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: 'agent:main:deleg' })).approvals).toEqual([]);
    // The attention count is the room's (tRPC over the same service); JSON-RPC keeps the contract's shape.
    const list = async (): Promise<any[]> => (await s.rt.gateway.sessionsList({ limit: 200 }, { attention: true })).sessions;
    // The trees are walked up in one statement, not a getSession per session and ancestor (one read per approval and level).
    const getSession = vi.spyOn(s.rt.store, 'getSession');
    const before = await list();
    expect(getSession).not.toHaveBeenCalled();
    getSession.mockRestore();
    expect(before.find((x) => x.sessionKey === parent).pendingApprovals).toBe(1);
    expect(before.find((x) => x.sessionKey === d.conversation_id).pendingApprovals).toBe(1);
    expect(before.find((x) => x.sessionKey === 'agent:main:deleg')?.pendingApprovals ?? 0).toBe(0);
    await s.rpc('approvals.resolve', { approvalId: approval.approvalId, decision: 'allow_once' });
    await until(async () => (await hist(parent)).some((m) => m.kind === 'agent_callback_result'));
    expect((await list()).find((x) => x.sessionKey === parent).pendingApprovals).toBe(0);
  });
});

describe("the room's page of sessions", () => {
  it('comes with the sessions above its delegates that it does not hold, badged, so the sidebar nests them', async () => {
    const parent = 'agent:main:paged-parent';
    const d = await call(parent, 'delegate_agent', { agent_id: 'writer', prompt: tool('exec', { command: 'echo paged' }), mode: 'detached' });
    const approval = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: d.conversation_id })).approvals[0]);
    // A page that holds the delegate and not its parent (here: writer's sessions only; in the room, a parent whose
    // last activity is older than the page). Before: no parent came with it, so the delegate showed as a root.
    const page = (await s.rt.gateway.sessionsList({ limit: 200, agentId: 'writer' }, { attention: true })) as { sessions: any[]; parents?: any[] };
    expect(page.sessions.map((x) => x.sessionKey)).toContain(d.conversation_id);
    expect(page.parents).toContainEqual(expect.objectContaining({ sessionKey: parent, pendingApprovals: 1 }));
    const onPage = new Set(page.sessions.map((x) => x.sessionKey));
    expect(page.parents!.filter((x) => onPage.has(x.sessionKey))).toEqual([]);
    // JSON-RPC keeps the contract's shape.
    expect(await s.rpc('sessions.list', { limit: 200, agentId: 'writer' })).not.toHaveProperty('parents');
    await s.rpc('approvals.resolve', { approvalId: approval.approvalId, decision: 'deny' });
  });
});

describe('delegate_sessions', () => {
  it('lists 7 delegates 3 at a time newest first with no repeat or gap, even when one is added meanwhile', async () => {
    const parent = 'agent:main:pool';
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await call(parent, 'delegate_agent', { agent_id: i % 2 ? 'writer' : 'researcher', prompt: `/reply d${i}` })).conversation_id);
    const p1 = await call(parent, 'delegate_sessions', { operation: 'list' });
    expect(p1.sessions.map((x: any) => x.conversation_id)).toEqual([ids[6], ids[5], ids[4]]);
    expect(p1.sessions[0]).toMatchObject({ agent_id: 'researcher', mode: 'standard', cwd: null, status: 'idle', turns: 1 });
    expect(p1.sessions[0].bytes).toBeGreaterThan(0);
    await call(parent, 'delegate_agent', { agent_id: 'writer', prompt: '/reply late' }); // added meanwhile
    const p2 = await call(parent, 'delegate_sessions', { operation: 'list', cursor: p1.next_cursor });
    const p3 = await call(parent, 'delegate_sessions', { operation: 'list', cursor: p2.next_cursor });
    expect(p2.sessions.map((x: any) => x.conversation_id)).toEqual([ids[3], ids[2], ids[1]]);
    expect(p3.sessions.map((x: any) => x.conversation_id)).toEqual([ids[0]]);
    expect(p3.next_cursor).toBeNull();
    // only the caller's own delegates
    expect((await call('agent:main:other', 'delegate_sessions', { operation: 'list' })).sessions).toEqual([]);
  });

  it('messages come newest first; dismiss then messages is unknown_conversation', async () => {
    const parent = 'agent:main:preview';
    const d = await call(parent, 'delegate_agent', { agent_id: 'researcher', prompt: '/reply one' });
    await call(parent, 'delegate_agent', { conversation_id: d.conversation_id, prompt: '/reply two' });
    const m = await call(parent, 'delegate_sessions', { operation: 'messages', conversation_id: d.conversation_id });
    expect(m.messages.map((x: any) => x.content)).toEqual(['two', '/reply two', 'one']);
    const m2 = await call(parent, 'delegate_sessions', { operation: 'messages', conversation_id: d.conversation_id, cursor: m.next_cursor });
    expect(m2.messages.map((x: any) => x.content)).toEqual(['/reply one']);
    expect(m2.next_cursor).toBeNull();
    expect(await call(parent, 'delegate_sessions', { operation: 'dismiss', conversation_id: d.conversation_id })).toEqual({ status: 'ok' });
    expect(await call(parent, 'delegate_sessions', { operation: 'messages', conversation_id: d.conversation_id })).toMatchObject({ status: 'error', error: { code: 'unknown_conversation' } });
    expect(await call(parent, 'delegate_agent', { conversation_id: d.conversation_id, prompt: 'x' })).toMatchObject({ status: 'error', error: { code: 'unknown_conversation' } });
    expect((await call(parent, 'delegate_sessions', { operation: 'list' })).sessions).toEqual([]);
  });
});

describe('bad input', () => {
  const parent = 'agent:main:bad';
  let conv: string;
  beforeAll(async () => {
    conv = (await call(parent, 'delegate_agent', { agent_id: 'writer', prompt: '/reply x' })).conversation_id;
  });
  it('conversation_id with batch, follow-up without prompt, unknown agent', async () => {
    expect(await call(parent, 'delegate_agent', { conversation_id: conv, batch: [{ agent_id: 'writer', prompt: 'x' }] })).toMatchObject({ error: { code: 'invalid_request' } });
    expect(await call(parent, 'delegate_agent', { conversation_id: conv })).toMatchObject({ error: { code: 'invalid_request' } });
    expect(await call(parent, 'delegate_agent', { agent_id: 'ghost', prompt: 'x' })).toMatchObject({ error: { code: 'unknown_agent' } });
  });
  it('unknown or someone else’s conversation_id', async () => {
    expect(await call(parent, 'delegate_agent', { conversation_id: 'agent:writer:subagent:nope', prompt: 'x' })).toMatchObject({ error: { code: 'unknown_conversation' } });
    expect(await call('agent:main:thief', 'delegate_agent', { conversation_id: conv, prompt: 'x' })).toMatchObject({ error: { code: 'unknown_conversation' } });
    expect(await call('agent:main:thief', 'delegate_sessions', { operation: 'messages', conversation_id: conv })).toMatchObject({ error: { code: 'unknown_conversation' } });
  });
  it('tampered cursors, cursors of another list, limit 0 or 1,000', async () => {
    expect(await call(parent, 'delegate_sessions', { operation: 'list', cursor: 'tampered!!' })).toMatchObject({ error: { code: 'invalid_cursor' } });
    const m = await call(parent, 'delegate_sessions', { operation: 'messages', conversation_id: conv, limit: 1 });
    expect(await call(parent, 'delegate_sessions', { operation: 'list', cursor: m.next_cursor })).toMatchObject({ error: { code: 'invalid_cursor' } });
    const tampered = Buffer.from(JSON.stringify({ l: 'delegates', s: 'agent:main:someone-else', k: ['2030', 'x'] })).toString('base64url');
    expect(await call(parent, 'delegate_sessions', { operation: 'list', cursor: tampered })).toMatchObject({ error: { code: 'invalid_cursor' } });
    for (const limit of [0, 1000]) expect(await call(parent, 'delegate_sessions', { operation: 'list', limit })).toMatchObject({ error: { code: 'invalid_request' } });
  });
  it('nesting depth over the limit and per-parent concurrency are limit_exceeded', async () => {
    const nested = await call(parent, 'delegate_agent', { agent_id: 'researcher', prompt: tool('delegate_agent', { agent_id: 'writer', prompt: 'deeper' }) });
    expect(JSON.parse(nested.response.replace(/^delegate_agent: /, ''))).toMatchObject({ status: 'error', error: { code: 'limit_exceeded' } });
    const solo = 'agent:solo:main';
    const r = await call(solo, 'delegate_agent', { batch: [{ agent_id: 'writer', prompt: 'a' }, { agent_id: 'writer', prompt: 'b' }] });
    expect(r).toMatchObject({ status: 'error', error: { code: 'limit_exceeded' } });
  });
});

describe('JSON-RPC delegates.* and previews', () => {
  it('list / messages / resume / dismiss / stats for a parent session', async () => {
    const parent = 'agent:main:rpc';
    const d = await call(parent, 'delegate_agent', { agent_id: 'researcher', prompt: '/reply hi' });
    const stats0 = await s.rpc<{ reusable: number; bytes: number }>('delegates.stats', {});
    const list = await s.rpc<{ sessions: any[] }>('delegates.list', { sessionKey: parent });
    expect(list.sessions.map((x) => x.conversation_id)).toEqual([d.conversation_id]);
    const resumed = await s.rpc<any>('delegates.resume', { sessionKey: parent, conversation_id: d.conversation_id, prompt: '/reply resumed' });
    expect(resumed).toMatchObject({ status: 'ok', conversation_id: d.conversation_id, response: 'resumed' });
    const msgs = await s.rpc<{ messages: any[] }>('delegates.messages', { sessionKey: parent, conversation_id: d.conversation_id, limit: 2 });
    expect(msgs.messages.map((m) => m.content)).toEqual(['resumed', '/reply resumed']);
    // The gateway's `limit` is 1–200 (CONTRACT §3), not the tool's 50: the whole transcript in one page.
    const all = await s.rpc<{ messages: any[]; next_cursor: string | null }>('delegates.messages', { sessionKey: parent, conversation_id: d.conversation_id, limit: 200 });
    expect(all.messages.map((m) => m.content).slice(0, 4)).toEqual(['resumed', '/reply resumed', 'hi', '/reply hi']);
    expect(all.next_cursor).toBeNull();
    expect((await s.rpc<{ sessions: any[] }>('delegates.list', { sessionKey: parent, limit: 200 })).sessions).toHaveLength(1);
    expect((await s.rpc<{ reusable: number; bytes: number }>('delegates.stats', {})).bytes).toBeGreaterThan(stats0.bytes);
    expect(await s.rpc('delegates.dismiss', { sessionKey: parent, conversation_id: d.conversation_id })).toEqual({ status: 'ok' });
    expect((await s.rpc<{ reusable: number }>('delegates.stats', {})).reusable).toBe(stats0.reusable - 1);
    const gone = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'delegates.messages', params: { sessionKey: parent, conversation_id: d.conversation_id } });
    expect(gone.body.error).toMatchObject({ code: -32004, data: { code: 'unknown_conversation' } });
    const bad = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'delegates.list', params: { sessionKey: parent, limit: 0 } });
    expect(bad.body.error.code).toBe(-32602);
    const big = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'delegates.messages', params: { sessionKey: parent, conversation_id: d.conversation_id, limit: 201 } });
    expect(big.body.error.code).toBe(-32602);
  });

  it('previews come from the live cache, and from the store after a restart', async () => {
    const dataDir = tmpDataDir();
    const a = await startTestServer({ dataDir });
    const parent = 'agent:main:main';
    let conv = '';
    try {
      const { runId } = await a.rpc<{ runId: string }>('agent', { sessionKey: parent, message: tool('delegate_agent', { agent_id: 'researcher', prompt: '/reply cached' }) });
      const w = await a.rpc<{ response: string }>('agent.wait', { runId });
      conv = JSON.parse(w.response.replace(/^delegate_agent: /, '')).conversation_id;
      const before = { ...a.rt.delegates.previewHits };
      const m = await a.rpc<{ messages: any[] }>('delegates.messages', { sessionKey: parent, conversation_id: conv });
      expect(m.messages.map((x) => x.content)).toEqual(['cached', '/reply cached']);
      expect(a.rt.delegates.previewHits.cache).toBe(before.cache + 1);
      expect(a.rt.delegates.previewHits.store).toBe(before.store);
    } finally {
      await a.close();
    }
    const b = await startTestServer({ dataDir });
    try {
      const m = await b.rpc<{ messages: any[] }>('delegates.messages', { sessionKey: parent, conversation_id: conv });
      expect(m.messages.map((x) => x.content)).toEqual(['cached', '/reply cached']);
      expect(b.rt.delegates.previewHits).toEqual({ cache: 0, store: 1 });
      await b.rpc('delegates.messages', { sessionKey: parent, conversation_id: conv }); // seeded now
      expect(b.rt.delegates.previewHits).toEqual({ cache: 1, store: 1 });
    } finally {
      await b.close();
    }
  });
});
