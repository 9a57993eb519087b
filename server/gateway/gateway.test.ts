// Gateway over real HTTP: the foundation's flows with the scripted model, queue modes and idempotency.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settledEvents, startTestServer, type TestServer, until } from '../testing/harness';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ config: { agents: [{ id: 'main' }, { id: 'researcher' }, { id: 'auto', tools: { exec: 'auto' } }, { id: 'quiet', reply: 'tool' }] } });
});
afterAll(async () => {
  await s?.close();
});

type Started = { runId: string; status: string };
const send = (sessionKey: string, message: string, extra: Record<string, unknown> = {}) => s.rpc<Started>('agent', { sessionKey, message, ...extra });
const wait = (runId: string, timeoutMs?: number) => s.rpc<{ status: string; response?: string; error?: string }>('agent.wait', { runId, ...(timeoutMs !== undefined ? { timeoutMs } : {}) });
const history = (sessionKey: string, extra: Record<string, unknown> = {}) =>
  s.rpc<{ messages: Array<{ id: number; role: string; kind: string; content: string; runId?: string; tool?: any; author: any }>; next_cursor: string | null }>('chat.history', { sessionKey, ...extra });


describe('agent + agent.wait', () => {
  it('echoes hello and writes user + assistant rows with the runId', async () => {
    const r = await send('agent:main:main', 'hello');
    expect(r.status).toBe('started');
    expect(await wait(r.runId)).toMatchObject({ status: 'ok', response: 'echo: hello' });
    const h = await history('agent:main:main');
    expect(h.messages.slice(0, 2).map((m) => [m.role, m.content, m.runId])).toEqual([
      ['assistant', 'echo: hello', r.runId],
      ['user', 'hello', r.runId],
    ]);
  });

  it('the message is in the transcript as soon as agent answers "started"', async () => {
    const r = await send('agent:main:instant', '/sleep 200\n/reply later');
    expect(r.status).toBe('started');
    expect((await history('agent:main:instant')).messages.map((m) => [m.role, m.content])).toEqual([['user', '/sleep 200\n/reply later']]);
    await wait(r.runId);
  });

  it('creates any valid agent:<id>:<rest> key and lowercases upper case', async () => {
    const r = await send('AGENT:Main:Work.Item-1', '/reply ok');
    expect((await wait(r.runId)).response).toBe('ok');
    const list = await s.rpc<{ sessions: Array<{ sessionKey: string; kind: string; agentId: string }> }>('sessions.list', { agentId: 'main' });
    expect(list.sessions.find((x) => x.sessionKey === 'agent:main:work.item-1')).toMatchObject({ kind: 'other', agentId: 'main' });
    expect((await history('agent:MAIN:work.item-1')).messages.length).toBe(2);
  });

  it('reports a failing model as error with its message', async () => {
    const r = await send('agent:main:fail', '/fail model exploded');
    expect(await wait(r.runId)).toMatchObject({ status: 'error', error: 'model exploded' });
  });

  it('answers timeout while the run goes on, then ok', async () => {
    const r = await send('agent:main:slow', '/sleep 300\n/reply done');
    expect(await wait(r.runId, 20)).toMatchObject({ status: 'timeout' });
    expect(await wait(r.runId)).toMatchObject({ status: 'ok', response: 'done' });
  });

  it('the response is the last step that produced text', async () => {
    const r = await send('agent:auto:main', '/reply first\n/tool sessions_list {"limit":1}');
    const w = await wait(r.runId);
    expect(w.status).toBe('ok');
    expect(w.response).toMatch(/^sessions_list: \{"sessions":\[/);
    const h = await history('agent:auto:main', { includeTools: true });
    expect(h.messages.map((m) => m.kind).reverse()).toEqual(['message', 'message', 'tool_call', 'tool_result', 'message']);
  });

  it('NO_REPLY and reply:"tool" post nothing but still answer agent.wait', async () => {
    const a = await send('agent:main:silent', '/reply NO_REPLY');
    expect(await wait(a.runId)).toMatchObject({ status: 'ok', response: 'NO_REPLY' });
    expect((await history('agent:main:silent')).messages.map((m) => m.role)).toEqual(['user']);
    const b = await send('agent:quiet:main', 'hi');
    expect(await wait(b.runId)).toMatchObject({ status: 'ok', response: 'echo: hi' });
    expect((await history('agent:quiet:main')).messages.map((m) => m.role)).toEqual(['user']);
  });
});

describe('idempotency', () => {
  it('a repeated idempotencyKey returns the first answer and starts nothing', async () => {
    const [a, b] = await Promise.all([send('agent:main:idem', 'once', { idempotencyKey: 'k-1' }), send('agent:main:idem', 'once', { idempotencyKey: 'k-1' })]);
    expect(b).toEqual(a);
    await wait(a.runId);
    const c = await send('agent:main:idem', 'once', { idempotencyKey: 'k-1' });
    expect(c).toEqual(a);
    expect((await history('agent:main:idem')).messages.length).toBe(2);
  });
});

describe('chat.history paging', () => {
  it('pages newest first with a cursor that stays stable while rows are added', async () => {
    for (let i = 0; i < 5; i++) await wait((await send('agent:main:paging', `m${i}`)).runId);
    const p1 = await history('agent:main:paging', { limit: 4 });
    expect(p1.messages.map((m) => m.content)).toEqual(['echo: m4', 'm4', 'echo: m3', 'm3']);
    expect(p1.next_cursor).toBeTruthy();
    await wait((await send('agent:main:paging', 'late')).runId); // new rows must not shift the next page
    const p2 = await history('agent:main:paging', { limit: 4, cursor: p1.next_cursor });
    expect(p2.messages.map((m) => m.content)).toEqual(['echo: m2', 'm2', 'echo: m1', 'm1']);
    const p3 = await history('agent:main:paging', { limit: 4, cursor: p2.next_cursor });
    expect(p3.messages.map((m) => m.content)).toEqual(['echo: m0', 'm0']);
    expect(p3.next_cursor).toBeNull();
    const ids = [...p1.messages, ...p2.messages, ...p3.messages].map((m) => m.id);
    expect(new Set(ids).size).toBe(10);
  });

  it('leaves tool rows out unless includeTools', async () => {
    const r = await send('agent:auto:tools', '/tool sessions_list {"limit":1}');
    await wait(r.runId);
    expect((await history('agent:auto:tools')).messages.map((m) => m.kind)).toEqual(['message', 'message']);
    const withTools = await history('agent:auto:tools', { includeTools: true });
    const call = withTools.messages.find((m) => m.kind === 'tool_call')!;
    expect(call.tool).toMatchObject({ name: 'sessions_list', args: { limit: 1 } });
    const result = withTools.messages.find((m) => m.kind === 'tool_result')!;
    expect(result.tool.result.sessions.length).toBe(1);
    expect(result.runId).toBe(r.runId);
  });
});

describe('approvals', () => {
  it('exec pauses on an approval that approvals.list shows and approvals.resolve settles', async () => {
    const r = await send('agent:main:approve', '/tool exec {"command":"echo hi"}');
    const pending = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: 'agent:main:approve' })).approvals[0]);
    expect(pending).toMatchObject({ sessionKey: 'agent:main:approve', runId: r.runId, tool: 'exec', args: { command: 'echo hi' } });
    expect(Object.keys(pending).sort()).toEqual(['approvalId', 'args', 'kind', 'parentChain', 'requestedAt', 'runId', 'sessionKey', 'tool']);
    expect(pending).toMatchObject({ kind: 'tool', parentChain: [pending.sessionKey] });
    expect(typeof pending.requestedAt).toBe('string');
    expect(await wait(r.runId, 50)).toMatchObject({ status: 'timeout' });
    expect(await s.rpc('approvals.resolve', { approvalId: pending.approvalId, decision: 'allow_once' })).toEqual({ status: 'ok' });
    const w = await wait(r.runId);
    expect(w.status).toBe('ok');
    expect(JSON.parse(w.response!.replace(/^exec: /, ''))).toMatchObject({ status: 'ok', exitCode: 0, stdout: 'hi\n' });
    // A second resolve of the same id is a conflict.
    const again = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'approvals.resolve', params: { approvalId: pending.approvalId, decision: 'deny' } });
    expect(again.body.error).toMatchObject({ code: -32009, data: { code: 'already_resolved' } });
    expect((await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: 'agent:main:approve' })).approvals).toEqual([]);
  });

  it('deny gives the model {status:"denied", reason}', async () => {
    const r = await send('agent:main:deny', '/tool exec {"command":"rm -rf /tmp/nothing"}');
    const pending = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: 'agent:main:deny' })).approvals[0]);
    await s.rpc('approvals.resolve', { approvalId: pending.approvalId, decision: 'deny', reason: 'not today' });
    expect(await wait(r.runId)).toMatchObject({ status: 'ok', response: 'exec: {"status":"denied","reason":"not today"}' });
  });

  it('allow_always adds a rule for that session only', async () => {
    const r1 = await send('agent:main:always', '/tool exec {"command":"echo 1"}');
    const p = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: 'agent:main:always' })).approvals[0]);
    await s.rpc('approvals.resolve', { approvalId: p.approvalId, decision: 'allow_always' });
    await wait(r1.runId);
    const r2 = await send('agent:main:always', '/tool exec {"command":"echo 2"}');
    expect((await wait(r2.runId)).response).toContain('"stdout":"2\\n"');
    const r3 = await send('agent:main:other-session', '/tool exec {"command":"echo 3"}');
    expect(await wait(r3.runId, 100)).toMatchObject({ status: 'timeout' });
    const p3 = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: 'agent:main:other-session' })).approvals[0]);
    await s.rpc('approvals.resolve', { approvalId: p3.approvalId, decision: 'deny' });
    await wait(r3.runId);
  });

  it('a tool policy of deny refuses without asking', async () => {
    const t = await startTestServer({ config: { agents: [{ id: 'main', tools: { exec: 'deny' } }] } });
    try {
      const r = await t.rpc<Started>('agent', { sessionKey: 'agent:main:main', message: '/tool exec {"command":"echo x"}' });
      const w = await t.rpc<{ response: string }>('agent.wait', { runId: r.runId });
      expect(w.response).toBe('exec: {"status":"denied","reason":"tool policy denies exec"}');
    } finally {
      await t.close();
    }
  });
});

describe('queue modes', () => {
  it('reject answers agent_busy while a /sleep run is active', async () => {
    const a = await send('agent:main:busy', '/sleep 300\n/reply slept');
    const res = await s.rpcRaw({ jsonrpc: '2.0', id: 9, method: 'agent', params: { sessionKey: 'agent:main:busy', message: 'hi', queueMode: 'reject' } });
    expect(res.body.error).toMatchObject({ code: -32009, data: { code: 'agent_busy' } });
    expect((await wait(a.runId)).response).toBe('slept');
  });

  it('steer injects into the active run at the next model boundary and returns its runId', async () => {
    const a = await send('agent:auto:steer', '/tool exec {"command":"sleep 0.3; echo done"}');
    await until(async () => (await history('agent:auto:steer', { includeTools: true })).messages.some((m) => m.kind === 'tool_call'));
    const b = await send('agent:auto:steer', '/reply steered!', { queueMode: 'steer' });
    expect(b).toEqual({ runId: a.runId, status: 'steered' });
    expect(await wait(a.runId)).toMatchObject({ status: 'ok', response: 'steered!' });
    const kinds = (await history('agent:auto:steer', { includeTools: true })).messages.reverse().map((m) => `${m.kind}:${m.runId === a.runId}`);
    expect(kinds).toEqual(['message:true', 'tool_call:true', 'tool_result:true', 'steer:true', 'message:true']);
  });

  it('followup runs after the active run; collect merges queued messages into one turn', async () => {
    const a = await send('agent:main:fq', '/sleep 200\n/reply first');
    const f = await send('agent:main:fq', 'second', { queueMode: 'followup' });
    expect(f.status).toBe('queued');
    const c1 = await send('agent:main:fq', 'third', { queueMode: 'collect' });
    const c2 = await send('agent:main:fq', 'fourth', { queueMode: 'collect' });
    expect(c2).toEqual(c1);
    expect((await wait(a.runId)).response).toBe('first');
    expect((await wait(f.runId)).response).toBe('echo: second');
    expect((await wait(c1.runId)).response).toBe('echo: third\n\nfourth');
  });

  it('interrupt aborts the active run and runs the new message', async () => {
    const a = await send('agent:main:intr', '/sleep 5000\n/reply never');
    await new Promise((r) => setTimeout(r, 50));
    const b = await send('agent:main:intr', 'now', { queueMode: 'interrupt' });
    expect(b.status).toBe('started');
    expect(await wait(a.runId)).toMatchObject({ status: 'error', error: 'interrupted' });
    expect((await wait(b.runId)).response).toBe('echo: now');
    // CONTRACT §4: the status `interrupted` is for a run that cannot be re-driven; one stopped by a newer message is an
    // error with code `interrupted`, on its row, its lifecycle end and the board.
    expect(await s.rt.store.getRun(a.runId)).toMatchObject({ status: 'error', error: 'interrupted' });
    const end = (await settledEvents(s.rt, { runId: a.runId, limit: 1000 })).at(-1)!;
    expect([end.stream, JSON.parse(end.data)]).toEqual(['lifecycle', { phase: 'error', status: 'error', error: 'interrupted' }]);
    const board = await s.rpc<{ failed: Array<{ runId: string; status: string }> }>('runs.board', {});
    expect(board.failed.find((r) => r.runId === a.runId)?.status).toBe('error');
  });

  it('interrupts at once: the newest runs, the ones it overtook end interrupted too (not run after it, newest first)', async () => {
    const key = 'agent:main:intr-many';
    const a = await send(key, '/sleep 5000\n/reply never');
    await new Promise((r) => setTimeout(r, 50));
    const more = await Promise.all(['m0', 'm1', 'm2', 'm3'].map((m) => send(key, `/sleep 200\n/reply ${m}`, { queueMode: 'interrupt' })));
    expect(more.every((r) => r.status === 'started')).toBe(true);
    expect(await wait(a.runId)).toMatchObject({ status: 'error', error: 'interrupted' });
    const ends = await Promise.all(more.map((r) => wait(r.runId)));
    // Before: all four ran to their answers one after another, each told "started" while it waited.
    expect(ends.filter((e) => e.status === 'ok')).toHaveLength(1);
    expect(ends.filter((e) => e.status === 'error' && e.error === 'interrupted')).toHaveLength(3);
    const replies = (await history(key)).messages.filter((m) => m.role === 'assistant').map((m) => m.content);
    expect(replies).toEqual([ends.find((e) => e.status === 'ok')!.response]);
  });

  it('a steer that arrives as the run ends becomes a follow-up: nothing lost', async () => {
    const key = 'agent:main:late-steer';
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => send(key, `/reply r${i}`, { queueMode: 'steer' })));
    for (const r of new Set(results.map((x) => x.runId))) await wait(r);
    await until(async () => (await s.rpc<{ sessions: any[] }>('sessions.list', {})).sessions.find((x) => x.sessionKey === key)?.status === 'idle');
    const msgs = (await history(key, { limit: 200 })).messages;
    const seen = msgs.filter((m) => m.role === 'user').map((m) => m.content).sort();
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => `/reply r${i}`).sort());
  });

  it('sessions.patch sets the session queue mode', async () => {
    await wait((await send('agent:main:patched', 'x')).runId);
    const p = await s.rpc<{ label: string }>('sessions.patch', { sessionKey: 'agent:main:patched', queueMode: 'reject', label: 'Patched', thinkingLevel: 'high', spawnDepth: 2 });
    // The patched session answers the settings it was given (CONTRACT §3).
    expect(p).toMatchObject({ sessionKey: 'agent:main:patched', label: 'Patched', queueMode: 'reject', thinkingLevel: 'high', spawnDepth: 2 });
    expect((await s.rt.gateway.sessionsGet('agent:main:patched')).queueMode).toBe('reject');
    const a = await send('agent:main:patched', '/sleep 200');
    const res = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'agent', params: { sessionKey: 'agent:main:patched', message: 'y' } });
    expect(res.body.error.data.code).toBe('agent_busy');
    await wait(a.runId);
  });
});

describe('sessions', () => {
  it('lists every kind newest first with counts; delete removes', async () => {
    await wait((await send('agent:researcher:main', 'r')).runId);
    const list = await s.rpc<{ sessions: any[]; next_cursor: string | null }>('sessions.list', { limit: 2 });
    expect(list.sessions.length).toBe(2);
    expect(list.next_cursor).toBeTruthy();
    const first = list.sessions[0];
    expect(first).toMatchObject({ sessionKey: 'agent:researcher:main', agentId: 'researcher', kind: 'main', model: 'scripted', status: 'idle', messageCount: 2 });
    expect(new Date(first.lastActivityAt).toISOString()).toBe(first.lastActivityAt);
    const p2 = await s.rpc<{ sessions: any[] }>('sessions.list', { limit: 2, cursor: list.next_cursor });
    // The next page holds sessions, none of the first page's (an empty page would not pass).
    expect(p2.sessions.length).toBeGreaterThan(0);
    const firstKeys = list.sessions.map((x) => x.sessionKey);
    expect(p2.sessions.filter((x) => firstKeys.includes(x.sessionKey))).toEqual([]);
    expect(await s.rpc('sessions.delete', { sessionKey: 'agent:researcher:main', deleteTranscript: true })).toEqual({ status: 'ok' });
    const gone = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'chat.history', params: { sessionKey: 'agent:researcher:main' } });
    expect(gone.body.error).toMatchObject({ code: -32004, data: { code: 'unknown_session' } });
  });

  it('pages past a session with the longest key a request may name (its cursor holds that key)', async () => {
    const long = `agent:main:${'x'.repeat(1024 - 'agent:main:'.length)}`;
    await wait((await send(long, 'long key')).runId);
    await wait((await send('agent:main:after-long', 'newer')).runId);
    const first = await s.rpc<{ sessions: Array<{ sessionKey: string }>; next_cursor: string }>('sessions.list', { limit: 2 });
    expect(first.sessions.map((x) => x.sessionKey)).toEqual(['agent:main:after-long', long]);
    // Before: -32602 invalid_cursor "cursor does not decode" (cursor keys were held to 512 characters).
    const next = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'sessions.list', params: { limit: 2, cursor: first.next_cursor } });
    expect(next.body.error).toBeUndefined();
    expect(next.body.result.sessions.length).toBeGreaterThan(0);
  });

  it('answers exactly the contract shapes over JSON-RPC', async () => {
    const list = await s.rpc<{ sessions: any[] }>('sessions.list', { limit: 5 });
    expect(list.sessions).toHaveLength(5); // earlier tests made more than five: every shape below is checked on real rows
    for (const x of list.sessions) expect(Object.keys(x).filter((k) => k !== 'label').sort()).toEqual(['agentId', 'kind', 'lastActivityAt', 'messageCount', 'model', 'sessionKey', 'status']);
    const agents = await s.rpc<{ agents: any[] }>('agents.list', {});
    expect(Object.keys(agents.agents[0]).sort()).toEqual(['agentId', 'model', 'name', 'tools']);
  });

  it('agents.list gives the configured agents with their tool policies', async () => {
    const r = await s.rpc<{ agents: any[] }>('agents.list', {});
    expect(r.agents.map((a) => a.agentId)).toEqual(['main', 'researcher', 'auto', 'quiet']);
    expect(r.agents[0]).toMatchObject({ agentId: 'main', name: 'Main', model: 'scripted', tools: { exec: 'ask', sessions_list: 'auto', sessions_history: 'auto' } });
    expect(r.agents[2].tools.exec).toBe('auto');
  });
});

describe('sessions.delete, then the same key again', () => {
  it('starts empty: no old rows in its history, its model context, its usage or its search hits (the old rows are kept aside)', async () => {
    const key = 'agent:main:reset-me';
    type Usage = { inputTokens: number; runs: number };
    const first = await send(key, 'zebrafinch hello');
    const firstWait = await s.rpc<{ usage: Usage }>('agent.wait', { runId: first.runId });
    await wait((await send(key, 'more words to grow the context')).runId);
    expect(await s.rpc('sessions.delete', { sessionKey: key })).toEqual({ status: 'ok' });
    const again = await send(key, 'zebrafinch hello');
    const againWait = await s.rpc<{ usage: Usage }>('agent.wait', { runId: again.runId });
    // The model saw this message alone, as on the first turn (before: the deleted session's four rows too).
    expect(againWait.usage.inputTokens).toBe(firstWait.usage.inputTokens);
    expect((await history(key)).messages.map((m) => m.content)).toEqual(['echo: zebrafinch hello', 'zebrafinch hello']);
    expect(await s.rpc<Usage>('sessions.usage', { sessionKey: key })).toMatchObject({ runs: 1, inputTokens: firstWait.usage.inputTokens });
    const hits = await until(async () => {
      const r = await s.rpc<{ results: Array<{ sessionKey: string; messageId: number }> }>('sessions.search', { query: 'zebrafinch' });
      return r.results.length >= 2 ? r.results : undefined;
    });
    const ids = new Set((await history(key)).messages.map((m) => m.id));
    expect(hits.every((h) => h.sessionKey === key && ids.has(h.messageId))).toBe(true);
    // The old rows are kept (no deleteTranscript), under a key no request can name.
    const kept = await s.rt.store.db.selectFrom('messages').select('session_key').where('session_key', 'like', `${key}#deleted-%`).execute();
    expect(kept).toHaveLength(4);
  });
});

describe.each([false, true])('sessions.delete (deleteTranscript %s), then the same key again', (deleteTranscript) => {
  it('holds none of the old session: usage, delegates, approvals, deliveries, board', async () => {
    const key = `agent:main:reset-all-${deleteTranscript}`;
    await wait((await send(key, '/tool delegate_agent {"agent_id":"researcher","prompt":"old work"}')).runId);
    const gated = await send(key, '/tool exec {"command":"echo old"}');
    const pending = await until(async () => (await s.rpc<{ approvals: Array<{ approvalId: string }> }>('approvals.list', { sessionKey: key })).approvals[0]);
    await s.rpc('approvals.resolve', { approvalId: pending.approvalId, decision: 'deny' });
    await wait(gated.runId);
    expect(await s.rpc('sessions.delete', { sessionKey: key, deleteTranscript })).toEqual({ status: 'ok' });
    const fresh = await send(key, 'fresh');
    await wait(fresh.runId);
    expect((await history(key)).messages).toHaveLength(2);
    // Before: runs 3 and the old delegate in the tree (deleteTranscript true), the old decision and delivery listed.
    expect(await s.rpc('sessions.usage', { sessionKey: key })).toMatchObject({ runs: 1, tree: { sessions: 1 } });
    expect((await s.rpc<{ sessions: unknown[] }>('delegates.list', { sessionKey: key })).sessions).toEqual([]);
    expect((await s.rpc<{ approvals: unknown[] }>('approvals.history', { sessionKey: key })).approvals).toEqual([]);
    expect((await s.rpc<{ deliveries: unknown[] }>('deliveries.list', { sessionKey: key })).deliveries).toEqual([]);
    const board = await s.rpc<Record<string, Array<{ sessionKey: string; runId: string }>>>('runs.board', {});
    expect(Object.values(board).flat().filter((x) => x.sessionKey === key).map((x) => x.runId)).toEqual([fresh.runId]);
  });
});

describe('sessions.delete while a detached delegate of it runs, then the same key again', () => {
  it.each([false, true])('its late callback is dropped, not delivered into the new session (deleteTranscript %s)', async (deleteTranscript) => {
    const key = `agent:main:late-callback-${deleteTranscript}`;
    const parent = await send(key, '/tool delegate_agent {"agent_id":"researcher","prompt":"/sleep 600\\n/reply late child","mode":"detached"}');
    await wait(parent.runId);
    const child = await until(async () => (await s.rt.store.db.selectFrom('runs').innerJoin('sessions', 'sessions.key', 'runs.session_key').select('runs.id').where('sessions.parent_key', '=', key).where('runs.status', 'in', ['running', 'queued']).execute()).map((r) => r.id)[0]);
    await s.rpc('sessions.delete', { sessionKey: key, deleteTranscript });
    await wait((await send(key, 'fresh')).runId);
    expect((await wait(child)).status).toBe('ok');
    const cb = await until(async () => {
      const row = await s.rt.store.db.selectFrom('callbacks').selectAll().where('target_run_id', '=', child).executeTakeFirst();
      return row && row.status !== 'pending' ? row : undefined;
    });
    // Before: delivered, a callback turn in the new session (history 4 rows, sessions.usage runs 2).
    expect(cb.status).toBe('dropped');
    expect((await history(key)).messages.map((m) => m.content)).toEqual(['echo: fresh', 'fresh']);
    expect(await s.rpc('sessions.usage', { sessionKey: key })).toMatchObject({ runs: 1 });
  });
});

describe('sessions.delete with work in flight', () => {
  it('aborts the active run and ends queued messages with an error', async () => {
    const key = 'agent:main:doomed';
    const a = await send(key, '/sleep 2000');
    const q = await send(key, 'queued', { queueMode: 'followup' });
    const before = await s.rpc<{ runs: { interrupted: number } }>('status', {});
    await s.rpc('sessions.delete', { sessionKey: key, deleteTranscript: true });
    // Cancelled, as agent.cancel ends a run: `interrupted` is only for a run that cannot be re-driven (CONTRACT §4).
    expect(await wait(a.runId)).toMatchObject({ status: 'error', error: 'cancelled' });
    expect((await s.rpc<{ runs: { interrupted: number } }>('status', {})).runs.interrupted).toBe(before.runs.interrupted);
    expect(await wait(q.runId)).toMatchObject({ status: 'error', error: 'session deleted' });
    const gone = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'chat.history', params: { sessionKey: key } });
    expect(gone.body.error.data.code).toBe('unknown_session');
  });
});
