// A session's thinkingLevel reaches the provider: OpenAI's reasoning_effort, Anthropic's thinking (its signed blocks sent back with tool calls).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAIServer } from '../models/testing/fake-openai-server';
import { startTestServer, type TestServer } from '../testing/harness';

/** A loopback Anthropic Messages API: each request answered by the next scripted SSE event list, bodies recorded. */
async function startFakeAnthropic(): Promise<{ baseURL: string; bodies: any[]; enqueue(...events: unknown[][]): void; close(): Promise<void> }> {
  const bodies: any[] = [];
  const queue: unknown[][] = [];
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      bodies.push(JSON.parse(raw));
      const events = queue.shift();
      if (!events) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'api_error', message: 'fake: no scripted reply' } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const e of events) res.write(`event: ${(e as { type: string }).type}\ndata: ${JSON.stringify(e)}\n\n`);
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    bodies,
    enqueue: (...replies) => void queue.push(...replies),
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

const usage = { input_tokens: 10, output_tokens: 5 };
const message = (stop: string, blocks: unknown[][]) => [
  { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-20250514', content: [], stop_reason: null, usage } },
  ...blocks.flat(),
  { type: 'message_delta', delta: { stop_reason: stop }, usage: { output_tokens: 5 } },
  { type: 'message_stop' },
];
const thinkingBlock = (index: number, thinking: string, signature: string) => [
  { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '' } },
  { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking } },
  { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature } },
  { type: 'content_block_stop', index },
];
const textBlock = (index: number, text: string) => [
  { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index, delta: { type: 'text_delta', text } },
  { type: 'content_block_stop', index },
];
const toolBlock = (index: number, id: string, name: string, input: unknown) => [
  { type: 'content_block_start', index, content_block: { type: 'tool_use', id, name, input: {} } },
  { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(input) } },
  { type: 'content_block_stop', index },
];

let openai: FakeOpenAIServer;
let anthropic: Awaited<ReturnType<typeof startFakeAnthropic>>;
let s: TestServer;
const ENV = ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY'] as const;
const saved = Object.fromEntries(ENV.map((k) => [k, process.env[k]]));

beforeAll(async () => {
  openai = await startFakeOpenAI();
  openai.setHandler(() => ({ text: 'ok' }));
  anthropic = await startFakeAnthropic();
  Object.assign(process.env, { OPENAI_BASE_URL: openai.baseURL, OPENAI_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: anthropic.baseURL, ANTHROPIC_API_KEY: 'sk-ant-test' });
  s = await startTestServer({
    config: {
      agents: [
        // o4-mini: a model the SDK's OpenAI provider treats as a reasoning model.
        { id: 'reasoner', model: 'openai:o4-mini' },
        { id: 'chatty', model: 'openai:gpt-4o' },
        { id: 'claude', model: 'anthropic:claude-sonnet-4-20250514', tools: { exec: 'auto' } },
      ],
    },
  });
});
afterAll(async () => {
  await s?.close();
  await openai?.close();
  await anthropic?.close();
  for (const k of ENV) if (saved[k] === undefined) delete process.env[k];
  else process.env[k] = saved[k];
});

/** Runs one turn and returns the body of the (last) request the fake received for it. */
async function turn(sessionKey: string, text = 'think about it') {
  const before = openai.requests.length;
  const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey, message: text });
  expect(await s.rpc('agent.wait', { runId })).toMatchObject({ status: 'ok', response: 'ok' });
  const reqs = openai.requests.slice(before);
  expect(reqs.length).toBe(1);
  return reqs[0]!.body;
}

describe('sessions.patch thinkingLevel', () => {
  it('sends reasoning_effort to an OpenAI reasoning model only while the session has a level', async () => {
    const key = 'agent:reasoner:think';
    const none = await turn(key);
    expect(none.model).toBe('o4-mini');
    expect(none).not.toHaveProperty('reasoning_effort');

    expect(await s.rpc('sessions.patch', { sessionKey: key, thinkingLevel: 'high' })).toMatchObject({ thinkingLevel: 'high' });
    expect(await turn(key)).toMatchObject({ reasoning_effort: 'high' });
    await s.rpc('sessions.patch', { sessionKey: key, thinkingLevel: 'minimal' });
    expect(await turn(key)).toMatchObject({ reasoning_effort: 'minimal' });

    // `off` and null (cleared) send nothing: the provider's default.
    await s.rpc('sessions.patch', { sessionKey: key, thinkingLevel: 'off' });
    expect(await turn(key)).not.toHaveProperty('reasoning_effort');
    await s.rpc('sessions.patch', { sessionKey: key, thinkingLevel: null });
    expect(await turn(key)).not.toHaveProperty('reasoning_effort');
  });

  it('leaves reasoning_effort out for an OpenAI chat model, which refuses it', async () => {
    const key = 'agent:chatty:think';
    await turn(key);
    await s.rpc('sessions.patch', { sessionKey: key, thinkingLevel: 'high' });
    const body = await turn(key);
    expect(body.model).toBe('gpt-4o');
    expect(body).not.toHaveProperty('reasoning_effort');
  });

  it('refuses an unknown level as invalid params and keeps the stored one', async () => {
    const key = 'agent:reasoner:refuse';
    await turn(key);
    await s.rpc('sessions.patch', { sessionKey: key, thinkingLevel: 'low' });
    for (const bad of ['extreme', 'HIGH', '', 3]) {
      const r = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'sessions.patch', params: { sessionKey: key, thinkingLevel: bad } });
      expect(r.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request', issues: [{ path: 'thinkingLevel' }] } });
    }
    expect(await turn(key)).toMatchObject({ reasoning_effort: 'low' });
  });

  it('turns Anthropic thinking on with a budget and sends the signed thinking back with the tool call', async () => {
    const key = 'agent:claude:think';
    anthropic.enqueue(message('end_turn', [textBlock(0, 'ok')]));
    const { runId: first } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'hello' });
    expect(await s.rpc('agent.wait', { runId: first })).toMatchObject({ status: 'ok', response: 'ok' });
    expect(anthropic.bodies.at(-1)).not.toHaveProperty('thinking');

    await s.rpc('sessions.patch', { sessionKey: key, thinkingLevel: 'high' });
    const before = anthropic.bodies.length;
    anthropic.enqueue(
      message('tool_use', [thinkingBlock(0, 'I should run echo.', 'sig-123'), toolBlock(1, 'toolu_1', 'exec', { command: 'echo hi' })]),
      message('end_turn', [textBlock(0, 'done')]),
    );
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'run echo' });
    expect(await s.rpc('agent.wait', { runId })).toMatchObject({ status: 'ok', response: 'done' });
    const [a, b] = anthropic.bodies.slice(before);
    expect(a.thinking).toEqual({ type: 'enabled', budget_tokens: 24_000 });
    expect(b.thinking).toEqual({ type: 'enabled', budget_tokens: 24_000 });
    // The tool-use turn starts with its signed thinking block, as Anthropic requires while thinking is on.
    const assistant = b.messages.findLast((m: { role: string }) => m.role === 'assistant');
    expect(assistant.content.map((c: { type: string }) => c.type)).toEqual(['thinking', 'tool_use']);
    expect(assistant.content[0]).toMatchObject({ thinking: 'I should run echo.', signature: 'sig-123' });
  });
});
