// Tests the scripted model through the real AI SDK entry points (streamText / generateText).
import { describe, expect, it } from 'vitest';
import { generateText, jsonSchema, streamText, tool, type ModelMessage, type ToolSet } from 'ai';
import { countTokens, createScriptedModel, splitIntoDeltas } from './scripted';

// Tools without execute: the run loop executes them itself, one model step per call.
const anyArgs = jsonSchema<Record<string, unknown>>({ type: 'object', additionalProperties: true });
const tools: ToolSet = {
  lookup: tool({ description: 'look something up', inputSchema: anyArgs }),
  exec: tool({ description: 'run a command', inputSchema: anyArgs }),
};

async function streamStep(messages: ModelMessage[], abortSignal?: AbortSignal) {
  const errors: unknown[] = [];
  const result = streamText({
    model: createScriptedModel(),
    messages,
    tools,
    abortSignal,
    maxRetries: 0,
    onError: ({ error }) => void errors.push(error),
  });
  const deltas: string[] = [];
  const partTypes: string[] = [];
  for await (const part of result.fullStream) {
    partTypes.push(part.type);
    if (part.type === 'text-delta') deltas.push(part.text);
  }
  return { result, deltas, errors, partTypes };
}

const user = (text: string): ModelMessage => ({ role: 'user', content: text });

/** The messages a run loop would send for the step after executing the step's tool calls. */
function withToolResults(
  messages: ModelMessage[],
  calls: Array<{ toolCallId: string; toolName: string; input: unknown }>,
  results: unknown[],
  order: number[] = calls.map((_, i) => i),
): ModelMessage[] {
  return [
    ...messages,
    {
      role: 'assistant',
      content: calls.map((c) => ({ type: 'tool-call' as const, toolCallId: c.toolCallId, toolName: c.toolName, input: c.input })),
    },
    {
      role: 'tool',
      content: order.map((i) => {
        const value = results[i];
        return {
          type: 'tool-result' as const,
          toolCallId: calls[i]!.toolCallId,
          toolName: calls[i]!.toolName,
          output: typeof value === 'string' ? { type: 'text' as const, value } : { type: 'json' as const, value: value as never },
        };
      }),
    },
  ];
}

describe('scripted model via streamText', () => {
  it('echoes a message without directives, trimmed, in several deltas, with usage', async () => {
    const { result, deltas } = await streamStep([user('  hello there, crosstalk world  ')]);
    expect(await result.text).toBe('echo: hello there, crosstalk world');
    expect(deltas.length).toBeGreaterThanOrEqual(3);
    expect(deltas.join('')).toBe('echo: hello there, crosstalk world');
    expect(await result.finishReason).toBe('stop');
    const usage = await result.usage;
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(usage.outputTokens).toBeGreaterThan(0);
    expect(usage.totalTokens).toBe(usage.inputTokens! + usage.outputTokens!);
  });

  it('streams even a short reply as several deltas', async () => {
    const { deltas } = await streamStep([user('/reply ok')]);
    expect(deltas.length).toBeGreaterThanOrEqual(2);
    expect(deltas.join('')).toBe('ok');
  });

  it('joins /reply lines and ignores non-directive lines', async () => {
    const { result } = await streamStep([user('please\n/reply first line\nnot a directive\n/reply second line')]);
    expect(await result.text).toBe('first line\nsecond line');
    expect(await result.toolCalls).toEqual([]);
  });

  it('reads only the newest user message and joins its text parts', async () => {
    const { result } = await streamStep([
      user('/reply old'),
      { role: 'assistant', content: 'old' },
      { role: 'user', content: [{ type: 'text', text: '/reply a' }, { type: 'text', text: '/reply b' }] },
    ]);
    expect(await result.text).toBe('a\nb');
  });

  it('makes several tool calls in one step with unique ids, then reports results in call order', async () => {
    const first = [user('/tool lookup {"q":"cats"}\n/tool exec {"command":"ls -la"}')];
    const { result } = await streamStep(first);
    const calls = await result.toolCalls;
    expect(calls.map((c) => [c.toolName, c.input])).toEqual([
      ['lookup', { q: 'cats' }],
      ['exec', { command: 'ls -la' }],
    ]);
    expect(new Set(calls.map((c) => c.toolCallId)).size).toBe(2);
    expect(calls.every((c) => /^call_/.test(c.toolCallId))).toBe(true);
    expect(await result.finishReason).toBe('tool-calls');
    expect(await result.text).toBe('');

    // Results arrive out of order (exec finished first); the reply follows call order.
    const second = withToolResults(first, calls, [{ found: ['a', 'b'] }, 'total 0'], [1, 0]);
    const next = await streamStep(second);
    expect(await next.result.text).toBe('lookup: {"found":["a","b"]}\nexec: "total 0"');
    expect(await next.result.toolCalls).toEqual([]);
    expect(await next.result.finishReason).toBe('stop');
  });

  it('replies text alongside tool calls in the same step', async () => {
    const { result } = await streamStep([user('/reply working on it\n/tool lookup {}')]);
    expect(await result.text).toBe('working on it');
    expect((await result.toolCalls).map((c) => c.toolName)).toEqual(['lookup']);
  });

  it('/silent gives no text in this step nor in the step after its tool calls', async () => {
    const first = [user('/silent\n/reply never shown\n/tool lookup {"q":1}')];
    const { result, deltas } = await streamStep(first);
    expect(await result.text).toBe('');
    expect(deltas).toEqual([]);
    const calls = await result.toolCalls;
    expect(calls).toHaveLength(1);

    const next = await streamStep(withToolResults(first, calls, [{ ok: true }]));
    expect(await next.result.text).toBe('');
    expect(next.deltas).toEqual([]);
    expect(await next.result.finishReason).toBe('stop');
  });

  it('/fail fails the call with exactly that message', async () => {
    const { errors } = await streamStep([user('/fail upstream exploded')]);
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).message).toBe('upstream exploded');
  });

  it('a /tool line with bad JSON fails with a clear message', async () => {
    const { errors } = await streamStep([user('/tool lookup {not json')]);
    expect((errors[0] as Error).message).toMatch(/\/tool lookup arguments are not valid JSON/);
    const arr = await streamStep([user('/tool lookup [1,2]')]);
    expect((arr.errors[0] as Error).message).toMatch(/must be a JSON object/);
  });

  it('/sleep waits, then answers', async () => {
    const started = Date.now();
    const { result } = await streamStep([user('/sleep 120\n/reply awake')]);
    expect(await result.text).toBe('awake');
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
  });

  it('/sleep aborts cleanly when the signal fires', async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 50);
    const { result, errors, partTypes, deltas } = await streamStep([user('/sleep 5000\n/reply too late')], controller.signal);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(deltas).toEqual([]);
    // streamText reports it as an abort, not as a model error.
    expect(partTypes).toContain('abort');
    expect(errors).toEqual([]);
    await expect(result.text).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('/sleep abort rejects doStream with an AbortError', async () => {
    const controller = new AbortController();
    const model = createScriptedModel();
    const pending = model.doStream({
      prompt: [{ role: 'user', content: [{ type: 'text', text: '/sleep 5000' }] }],
      abortSignal: controller.signal,
    });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });
});

describe('scripted model via generateText', () => {
  it('echoes and reports usage', async () => {
    const result = await generateText({ model: createScriptedModel(), prompt: 'hi there' });
    expect(result.text).toBe('echo: hi there');
    expect(result.usage.outputTokens).toBeGreaterThan(0);
  });

  it('makes tool calls and then reports their results', async () => {
    const first = [user('/tool lookup {"q":"x"}')];
    const step1 = await generateText({ model: createScriptedModel(), messages: first, tools });
    expect(step1.toolCalls.map((c) => [c.toolName, c.input])).toEqual([['lookup', { q: 'x' }]]);
    expect(step1.finishReason).toBe('tool-calls');
    const step2 = await generateText({
      model: createScriptedModel(),
      messages: withToolResults(first, step1.toolCalls, [{ status: 'ok', n: 2 }]),
      tools,
    });
    expect(step2.text).toBe('lookup: {"status":"ok","n":2}');
  });

  it('/fail rejects with the message', async () => {
    await expect(generateText({ model: createScriptedModel(), prompt: '/fail nope', maxRetries: 0 })).rejects.toThrow(/^nope$/);
  });
});

describe('splitIntoDeltas', () => {
  it('keeps text exact', () => {
    for (const s of ['a b c d', '  lead and trail  ', 'x', 'two words', 'line\n\nbreak here', '😀😀😀😀']) {
      expect(splitIntoDeltas(s).join('')).toBe(s);
    }
    expect(splitIntoDeltas('')).toEqual([]);
  });
});

describe('countTokens (the scripted model usage)', () => {
  const byRegex = (t: string) => (t.match(/[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu) ?? []).length;
  it('counts what the word-or-symbol regex matches, in one pass', () => {
    const samples = [
      '',
      'hello world',
      '  leading\tand\ntrailing\r\n ',
      'snake_case and CamelCase42, x=1+2; {"a": [1, 2]}',
      'naïve café — déjà vu…',
      'ＡＢＣ 日本語のテキスト 中文',
      'emoji 😀👍🏽 and 𝒳𝒴 math letters 𝟘𝟙',
      'non\u00a0breaking\u2003spaces\u3000ideographic\ufeffbom',
      'lone \ud800 surrogate \udc00 here',
      'Ⅻ roman ² superscript ٣ arabic digit',
    ];
    for (const t of samples) expect(countTokens(t), JSON.stringify(t)).toBe(byRegex(t));
    // Random strings over a mixed alphabet.
    const alphabet = ['a', 'Z', '9', '_', ' ', '\t', '\n', '.', ',', 'é', 'ß', '日', '😀', '\u00a0', '\u2028', '-', '"', '٣', '\ud800'];
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    for (let k = 0; k < 300; k++) {
      const t = Array.from({ length: Math.floor(rnd() * 40) }, () => alphabet[Math.floor(rnd() * alphabet.length)]).join('');
      expect(countTokens(t), JSON.stringify(t)).toBe(byRegex(t));
    }
  });
});
