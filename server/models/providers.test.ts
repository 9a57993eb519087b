// Tests the openai and compatible providers end to end over real HTTP against the fake OpenAI-compatible server.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { generateText, jsonSchema, streamText, tool, type ModelMessage, type ToolSet } from 'ai';
import { resolveModel } from './registry';
import { startFakeOpenAI, type FakeOpenAIServer } from './testing/fake-openai-server';

let server: FakeOpenAIServer;
beforeAll(async () => {
  server = await startFakeOpenAI();
});
afterAll(() => server.close());
beforeEach(() => {
  server.requests.length = 0;
});

const tools: ToolSet = {
  get_weather: tool({
    description: 'weather for a city',
    inputSchema: jsonSchema<{ city: string }>({
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    }),
  }),
};

const specs = [
  { spec: 'openai:gpt-x', env: () => ({ OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: server.baseURL }), auth: 'Bearer sk-test' },
  { spec: 'compatible:local-model', env: () => ({ CROSSTALK_COMPAT_BASE_URL: server.baseURL, CROSSTALK_COMPAT_API_KEY: 'ck' }), auth: 'Bearer ck' },
];

describe.each(specs)('$spec over the chat-completions wire format', ({ spec, env, auth }) => {
  it('streams a tool-call step, then a text step after the tool result is sent back', async () => {
    const model = resolveModel(spec, env());
    const messages: ModelMessage[] = [{ role: 'user', content: 'weather in Oslo?' }];

    server.enqueue({
      text: 'Let me check.',
      toolCalls: [{ id: 'call_abc', name: 'get_weather', args: { city: 'Oslo' } }],
      usage: { promptTokens: 42, completionTokens: 9 },
    });
    const step1 = streamText({ model, messages, tools, maxRetries: 0 });
    const deltas: string[] = [];
    for await (const part of step1.fullStream) if (part.type === 'text-delta') deltas.push(part.text);

    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('Let me check.');
    const calls = await step1.toolCalls;
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ toolCallId: 'call_abc', toolName: 'get_weather', input: { city: 'Oslo' } });
    expect(await step1.finishReason).toBe('tool-calls');
    const usage = await step1.usage;
    expect(usage.inputTokens).toBe(42);
    expect(usage.outputTokens).toBe(9);

    const req1 = server.requests[0]!;
    expect(req1.path).toBe('/v1/chat/completions');
    expect(req1.headers.authorization).toBe(auth);
    expect(req1.body.model).toBe(spec.split(':')[1]);
    expect(req1.body.stream).toBe(true);
    expect(req1.body.stream_options).toEqual({ include_usage: true });
    expect(req1.body.tools?.map((t) => t.function.name)).toEqual(['get_weather']);

    // Second step: the run loop executed the tool itself and sends the result back.
    const step2Messages: ModelMessage[] = [
      ...messages,
      ...(await step1.response).messages,
      {
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: 'call_abc', toolName: 'get_weather', output: { type: 'json', value: { tempC: 7 } } }],
      },
    ];
    server.enqueue({ text: 'It is 7°C in Oslo.', usage: { promptTokens: 60, completionTokens: 8 } });
    const step2 = streamText({ model, messages: step2Messages, tools, maxRetries: 0 });
    expect(await step2.text).toBe('It is 7°C in Oslo.');
    expect(await step2.finishReason).toBe('stop');
    expect((await step2.usage).inputTokens).toBe(60);

    const sent = server.requests[1]!.body.messages;
    const assistant = sent.find((m) => m.role === 'assistant');
    expect(assistant?.tool_calls).toEqual([
      { id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
    ]);
    const toolMsg = sent.find((m) => m.role === 'tool');
    expect(toolMsg).toMatchObject({ tool_call_id: 'call_abc' });
    expect(JSON.parse(String(toolMsg!.content))).toEqual({ tempC: 7 });
  });

  it('handles a non-streaming call too', async () => {
    const model = resolveModel(spec, env());
    server.enqueue({ toolCalls: [{ name: 'get_weather', args: { city: 'Rome' } }], usage: { promptTokens: 5, completionTokens: 3 } });
    const result = await generateText({ model, prompt: 'weather in Rome?', tools, maxRetries: 0 });
    expect(server.requests[0]!.body.stream).toBeFalsy();
    expect(result.toolCalls.map((c) => [c.toolName, c.input])).toEqual([['get_weather', { city: 'Rome' }]]);
    expect(result.usage.inputTokens).toBe(5);
  });

  it('surfaces an HTTP error from the server', async () => {
    const model = resolveModel(spec, env());
    server.enqueue({ status: 400, message: 'bad tool schema' });
    await expect(generateText({ model, prompt: 'x', maxRetries: 0 })).rejects.toThrow(/bad tool schema/);
  });
});
