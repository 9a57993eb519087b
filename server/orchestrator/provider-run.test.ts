// The real provider path: an agent on `openai:` runs tool calls against a loopback fake speaking OpenAI's streaming wire format.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAIServer } from '../models/testing/fake-openai-server';
import { readSse, startTestServer, type TestServer } from '../testing/harness';

let fake: FakeOpenAIServer;
let s: TestServer;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  process.env.OPENAI_BASE_URL = fake.baseURL;
  process.env.OPENAI_API_KEY = 'sk-test';
  s = await startTestServer({
    config: {
      agents: [
        { id: 'gpt', model: 'openai:gpt-test', tools: { exec: 'auto' } },
        { id: 'backup', model: ['openai:gpt-broken', 'scripted'] },
      ],
    },
  });
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

describe('openai provider through the run loop', () => {
  it('streams text, executes the streamed tool call, sends the result back and finishes', async () => {
    fake.enqueue(
      { text: 'Let me look.', toolCalls: [{ name: 'exec', args: { command: 'echo from-tool' } }], usage: { promptTokens: 11, completionTokens: 7 } },
      { text: 'The tool said from-tool.' },
    );
    const before = fake.requests.length;
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:gpt:main', message: 'run echo please' });
    expect(await s.rpc('agent.wait', { runId })).toMatchObject({ status: 'ok', response: 'The tool said from-tool.' });

    const reqs = fake.requests.slice(before);
    expect(reqs.length).toBe(2);
    expect(reqs[0]!.body.stream).toBe(true);
    expect(reqs[0]!.body.model).toBe('gpt-test');
    expect(reqs[0]!.body.tools?.map((t) => t.function.name)).toEqual(expect.arrayContaining(['exec', 'sessions_history', 'sessions_list', 'send_message', 'sessions_send']));
    expect(reqs[0]!.body.messages.at(-1)).toMatchObject({ role: 'user', content: 'run echo please' });
    const second = reqs[1]!.body.messages;
    const assistant = second.find((m) => m.role === 'assistant' && Array.isArray(m.tool_calls))!;
    const callId = (assistant.tool_calls as any[])[0].id;
    const toolMsg = second.find((m) => m.role === 'tool')!;
    expect(toolMsg.tool_call_id).toBe(callId);
    expect(JSON.parse(String(toolMsg.content))).toMatchObject({ status: 'ok', exitCode: 0, stdout: 'from-tool\n' });

    const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:gpt:main', includeTools: true });
    expect(h.messages.reverse().map((m) => [m.kind, m.content])).toEqual([
      ['message', 'run echo please'],
      ['message', 'Let me look.'],
      ['tool_call', ''],
      ['tool_result', ''],
      ['message', 'The tool said from-tool.'],
    ]);
    const evs = await readSse(`${s.url}/api/gateway/events?runId=${runId}`, { lastEventId: 0, until: (e) => e.some((x) => x.stream === 'lifecycle' && x.data.phase === 'end') });
    // Only CONTRACT §4's lifecycle phases (a model step's usage is in the store and agent.wait, not an event of its own).
    expect(evs.filter((e) => e.stream === 'lifecycle').map((e) => e.data.phase)).toEqual(['start', 'end']);
    expect(await s.rpc('agent.wait', { runId })).toMatchObject({ usage: { inputTokens: expect.any(Number), outputTokens: expect.any(Number) } });
    expect(((await s.rpc('agent.wait', { runId })) as { usage: { inputTokens: number } }).usage.inputTokens).toBeGreaterThanOrEqual(11);
  });

  it('a final text that repeats what send_message already delivered is not posted twice', async () => {
    fake.enqueue({ toolCalls: [{ name: 'send_message', args: { content: 'All done.' } }] }, { text: 'All done.' });
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:gpt:dedupe', message: 'finish up' });
    expect(await s.rpc('agent.wait', { runId })).toMatchObject({ status: 'ok', response: 'All done.' });
    const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:gpt:dedupe' });
    expect(h.messages.filter((m) => m.role === 'assistant').map((m) => [m.content, m.author.type])).toEqual([['All done.', 'persona']]);
  });

  it('a provider error fails the run with a clear error, and the server goes on', async () => {
    fake.enqueue({ status: 500, message: 'upstream down' });
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:gpt:err', message: 'x' });
    const w = await s.rpc<{ status: string; error: string }>('agent.wait', { runId });
    expect(w.status).toBe('error');
    expect(w.error).toMatch(/upstream down|500|Internal/i);
  });

  it('a model list falls back to the next model and says so with lifecycle fallback events', async () => {
    fake.enqueue({ status: 500, message: 'primary broken' }, { text: 'primary is back' });
    const key = 'agent:backup:main';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'hi' });
    expect(await s.rpc('agent.wait', { runId })).toMatchObject({ status: 'ok', response: 'echo: hi' });
    const evs = await readSse(`${s.url}/api/gateway/events?runId=${runId}`, { lastEventId: 0, until: (e) => e.some((x) => x.data.phase === 'end') });
    expect(evs.find((e) => e.data.phase === 'fallback')?.data).toMatchObject({ phase: 'fallback', from: 'openai:gpt-broken', to: 'scripted' });
    // The primary answers again on the next run: fallback_cleared.
    const r2 = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'again' });
    expect(await s.rpc('agent.wait', { runId: r2.runId })).toMatchObject({ status: 'ok', response: 'primary is back' });
    const evs2 = await readSse(`${s.url}/api/gateway/events?runId=${r2.runId}`, { lastEventId: 0, until: (e) => e.some((x) => x.data.phase === 'end') });
    expect(evs2.find((e) => e.data.phase === 'fallback_cleared')?.data).toMatchObject({ model: 'openai:gpt-broken' });
  });
});
