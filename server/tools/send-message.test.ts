// send_message, silence and reply modes (issue 5), through /api/gateway with the scripted model, and their metrics.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer, until } from '../testing/harness';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ config: { agents: [{ id: 'main', persona: 'Ada' }, { id: 'quiet', persona: 'Quill', reply: 'tool' }, { id: 'tight', limits: { sendMessagePerRun: 1 } }] } });
});
afterAll(async () => {
  await s?.close();
});

type Msg = { role: string; kind: string; content: string; author: any; runId?: string; tool?: any };
const turn = async (sessionKey: string, message: string) => {
  const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey, message });
  return { runId, ...(await s.rpc<{ status: string; response: string }>('agent.wait', { runId })) };
};
const rows = async (sessionKey: string, includeTools = false) => (await s.rpc<{ messages: Msg[] }>('chat.history', { sessionKey, limit: 200, includeTools })).messages.reverse();
const metrics = async () => (await fetch(`${s.url}/api/metrics`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } })).text();
const metric = (text: string, name: string) => Number(new RegExp(`^${name.replace(/[{}"]/g, (c) => '\\' + c)} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
const sends = (n: number) => Array.from({ length: n }, (_, i) => `/tool send_message {"content":"part ${i + 1}"}`).join('\n');

describe('send_message', () => {
  it('three calls and /silent leave three persona rows and no final reply', async () => {
    const r = await turn('agent:main:three', `${sends(3)}\n/silent`);
    expect(r.status).toBe('ok');
    const posted = (await rows('agent:main:three')).filter((m) => m.role === 'assistant');
    expect(posted.map((m) => [m.kind, m.content, m.author])).toEqual([1, 2, 3].map((i) => ['message', `part ${i}`, { type: 'persona', id: 'main', name: 'Ada' }]));
    expect(posted.every((m) => m.runId === r.runId)).toBe(true);
    const results = (await rows('agent:main:three', true)).filter((m) => m.kind === 'tool_result').map((m) => m.tool.result);
    expect(results.every((x) => x.status === 'sent' && /^\d+$/.test(x.messageId))).toBe(true);
  });

  it('seven calls leave five rows and two rate_limited results; the run goes on', async () => {
    const before = metric(await metrics(), 'crosstalk_rate_limited_total{tool="send_message"}');
    const r = await turn('agent:main:seven', `${sends(7)}\n/silent`);
    expect(r.status).toBe('ok');
    expect((await rows('agent:main:seven')).filter((m) => m.role === 'assistant').length).toBe(5);
    const results = (await rows('agent:main:seven', true)).filter((m) => m.kind === 'tool_result').map((m) => m.tool.result);
    expect(results.filter((x) => x.status === 'sent').length).toBe(5);
    expect(results.filter((x) => x.status === 'error' && x.error.code === 'rate_limited').length).toBe(2);
    expect(metric(await metrics(), 'crosstalk_rate_limited_total{tool="send_message"}')).toBe(before + 2);
  });

  it('the limit is per run and configurable per agent', async () => {
    await turn('agent:tight:main', `${sends(2)}\n/silent`);
    await turn('agent:tight:main', `${sends(1)}\n/silent`);
    expect((await rows('agent:tight:main')).filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(['part 1', 'part 1']);
  });

  it('/reply NO_REPLY posts nothing, completes ok, and the silence counter rises', async () => {
    const before = metric(await metrics(), 'crosstalk_agent_chose_silence_total');
    const r = await turn('agent:main:nothing', '/reply NO_REPLY');
    expect(r.status).toBe('ok');
    expect((await rows('agent:main:nothing')).map((m) => m.role)).toEqual(['user']);
    expect(metric(await metrics(), 'crosstalk_agent_chose_silence_total')).toBe(before + 1);
  });

  it('reply:"tool" posts only through send_message; plain text stays in the event stream', async () => {
    const r = await turn('agent:quiet:main', 'just text');
    expect(r).toMatchObject({ status: 'ok', response: 'echo: just text' });
    expect((await rows('agent:quiet:main')).map((m) => m.role)).toEqual(['user']);
    await turn('agent:quiet:main', '/tool send_message {"content":"said it"}');
    expect((await rows('agent:quiet:main')).filter((m) => m.role === 'assistant').map((m) => [m.content, m.author.name])).toEqual([['said it', 'Quill']]);
  });

  it('text already delivered with send_message is not posted twice', async () => {
    await turn('agent:main:dedupe', '/tool send_message {"content":"hello there"}\n/reply hello there');
    const posted = (await rows('agent:main:dedupe')).filter((m) => m.role === 'assistant').map((m) => m.content);
    expect(posted.filter((c) => c === 'hello there').length).toBe(1);
  });

  it('bad content gets a clear error and the run goes on', async () => {
    const r = await turn('agent:main:bad', '/tool send_message {"content":""}\n/tool send_message {"content":42}\n/tool send_message {}');
    expect(r.status).toBe('ok');
    const results = (await rows('agent:main:bad', true)).filter((m) => m.kind === 'tool_result').map((m) => m.tool.result);
    expect(results.map((x) => x.error.code)).toEqual(['invalid_request', 'invalid_request', 'invalid_request']);
    const tool = s.rt.orchestrator['o'].tools.get('send_message')!;
    const ctx = { runId: 'run_x', sessionKey: 'agent:main:bad', agent: s.rt.config.agents[0]!, callId: 'c', signal: new AbortController().signal, counters: new Map(), delivered: new Set<string>() };
    expect(await tool.execute({ content: 'x'.repeat(256 * 1024 + 1) }, ctx)).toMatchObject({ status: 'error', error: { code: 'invalid_request', message: expect.stringContaining('256 KiB') } });
  });

  it('from a run whose session was deleted meanwhile: the run is cancelled before it posts, and nothing lands in the gone session', async () => {
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:vanish', message: '/sleep 2000\n/tool send_message {"content":"too late"}' });
    await until(async () => (await s.rt.store.getRun(runId))?.status === 'running');
    await s.rpc('sessions.delete', { sessionKey: 'agent:main:vanish' });
    // sessions.delete answers once the run has ended: its outcome is settled, not "ok or error". Cancelled, as by
    // agent.cancel (`interrupted` is for a run that cannot be re-driven, CONTRACT §4).
    expect(await s.rt.store.getRun(runId)).toMatchObject({ status: 'error', error: 'cancelled' });
    expect(await s.rpc('agent.wait', { runId })).toMatchObject({ status: 'error', error: 'cancelled' });
    const gone = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'chat.history', params: { sessionKey: 'agent:main:vanish' } });
    expect(gone.body.error).toMatchObject({ code: -32004, data: { code: 'unknown_session' } });
    // Neither under the key nor under the archive key the deleted session's rows moved to.
    const posted = await s.rt.store.db.selectFrom('messages').select('content').where('session_key', 'like', 'agent:main:vanish%').where('content', '=', 'too late').execute();
    expect(posted).toEqual([]);
    expect((await turn('agent:main:main', 'alive')).response).toBe('echo: alive');
  });
});

describe('metrics', () => {
  it('counts runs by outcome, tool calls by name/outcome and messages per run', async () => {
    const before = await metrics();
    await turn('agent:main:m1', '/tool send_message {"content":"a"}\n/silent');
    await turn('agent:main:m1', '/fail broken');
    const after = await metrics();
    expect(metric(after, 'crosstalk_runs_total{outcome="ok"}')).toBe(metric(before, 'crosstalk_runs_total{outcome="ok"}') + 1);
    expect(metric(after, 'crosstalk_runs_total{outcome="error"}')).toBe(metric(before, 'crosstalk_runs_total{outcome="error"}') + 1);
    expect(metric(after, 'crosstalk_tool_calls_total{tool="send_message",outcome="ok"}')).toBeGreaterThan(metric(before, 'crosstalk_tool_calls_total{tool="send_message",outcome="ok"}'));
    expect(metric(after, 'crosstalk_messages_sent_per_run_count')).toBe(metric(before, 'crosstalk_messages_sent_per_run_count') + 1);
    expect(metric(after, 'crosstalk_messaging_tool_calls_total{tool="send_message",outcome="ok"}')).toBe(metric(before, 'crosstalk_messaging_tool_calls_total{tool="send_message",outcome="ok"}') + 1);
    expect(after).toContain('crosstalk_approval_wait_seconds_bucket');
    expect(after).toContain('crosstalk_callback_delivery_seconds_bucket');
  });
});

describe('status', () => {
  it('summarises runs, silence and rate limits for the status panel', async () => {
    const st = await s.rpc<any>('status', {});
    expect(st).toMatchObject({ activeRuns: 0, pendingApprovals: 0, delegates: { reusable: 0, bytes: 0 }, webhooksDead: 0 });
    expect(st.runs.ok).toBeGreaterThan(5);
    expect(st.silence).toBeGreaterThan(0);
    expect(st.rateLimited).toBeGreaterThanOrEqual(2);
  });
});
