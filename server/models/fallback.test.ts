// Tests the fallback chain with a real HTTP primary (the fake OpenAI-compatible server) and the scripted model.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { generateText, streamText } from 'ai';
import { createModelChain, FallbackTracker, type FallbackInfo } from './fallback';
import { startFakeOpenAI, type FakeOpenAIServer } from './testing/fake-openai-server';

let server: FakeOpenAIServer;
beforeAll(async () => {
  server = await startFakeOpenAI();
});
afterAll(() => server.close());
beforeEach(() => {
  server.requests.length = 0;
  server.setHandler(null);
});

function chain(specs: string[], tracker = new FallbackTracker(), env: Record<string, string> = { CROSSTALK_COMPAT_BASE_URL: server.baseURL }) {
  const fallbacks: FallbackInfo[] = [];
  const cleared: Array<{ model: string }> = [];
  const model = createModelChain(specs, {
    env,
    tracker,
    onFallback: (info) => void fallbacks.push(info),
    onFallbackCleared: (info) => void cleared.push(info),
  });
  return { model, fallbacks, cleared, tracker };
}

// maxRetries 0: the SDK's own retries would otherwise re-run the whole chain on a retryable error.
async function streamStep(model: ReturnType<typeof chain>['model'], prompt: string, abortSignal?: AbortSignal) {
  const errors: unknown[] = [];
  const result = streamText({ model, prompt, maxRetries: 0, abortSignal, onError: ({ error }) => void errors.push(error) });
  let text = '';
  const partTypes: string[] = [];
  for await (const part of result.fullStream) {
    partTypes.push(part.type);
    if (part.type === 'text-delta') text += part.text;
  }
  return { text, errors, partTypes };
}

describe('createModelChain', () => {
  it('falls back to the next spec when the primary fails with an HTTP error, and clears once the primary recovers', async () => {
    const c = chain(['compatible:primary-model', 'scripted']);
    server.enqueue({ status: 500, message: 'primary is down' });
    const first = await streamStep(c.model, 'hello');
    expect(first.text).toBe('echo: hello');
    expect(first.errors).toEqual([]);
    expect(c.fallbacks).toHaveLength(1);
    expect(c.fallbacks[0]).toMatchObject({ from: 'compatible:primary-model', to: 'scripted' });
    expect(c.fallbacks[0]!.error).toMatch(/primary is down/);
    expect(c.tracker.activeFallback).toBe('scripted');
    expect(c.cleared).toEqual([]);

    server.enqueue({ text: 'primary is back' });
    const second = await streamStep(c.model, 'hello again');
    expect(second.text).toBe('primary is back');
    expect(c.cleared).toEqual([{ model: 'compatible:primary-model' }]);
    expect(c.tracker.activeFallback).toBeNull();

    // Cleared is announced once, not on every later primary success.
    server.enqueue({ text: 'still fine' });
    await streamStep(c.model, 'x');
    expect(c.cleared).toHaveLength(1);
    expect(c.fallbacks).toHaveLength(1);
  });

  it('keeps fallback state across chains that share a tracker (one per agent, across runs)', async () => {
    const tracker = new FallbackTracker();
    const a = chain(['compatible:m', 'scripted'], tracker);
    server.enqueue({ status: 503 });
    await streamStep(a.model, 'one');
    expect(a.fallbacks).toHaveLength(1);

    const b = chain(['compatible:m', 'scripted'], tracker);
    server.enqueue({ text: 'ok' });
    await streamStep(b.model, 'two');
    expect(b.cleared).toEqual([{ model: 'compatible:m' }]);
  });

  it('falls back when the stream errors before any content', async () => {
    const c = chain(['compatible:m', 'scripted']);
    server.enqueue({ streamError: 'overloaded mid-stream' });
    const out = await streamStep(c.model, 'hi');
    expect(out.text).toBe('echo: hi');
    expect(out.errors).toEqual([]);
    expect(c.fallbacks[0]!.error).toMatch(/overloaded mid-stream/);
  });

  it('does not fall back once content has streamed: the error reaches the caller', async () => {
    const c = chain(['compatible:m', 'scripted']);
    server.enqueue({ text: 'partial answer', errorAfterText: 'connection lost' });
    const out = await streamStep(c.model, 'hi');
    expect(out.text).toBe('partial answer');
    expect(out.partTypes).toContain('error');
    expect(c.fallbacks).toEqual([]);
  });

  it('falls back past a spec that cannot resolve and past a scripted /fail', async () => {
    const c = chain(['compatible:nowhere', 'scripted'], new FallbackTracker(), {});
    const out = await generateText({ model: c.model, prompt: 'hey', maxRetries: 0 });
    expect(out.text).toBe('echo: hey');
    expect(c.fallbacks[0]!.error).toMatch(/CROSSTALK_COMPAT_BASE_URL/);

    const d = chain(['scripted', 'compatible:m']);
    server.enqueue({ text: 'secondary answered' });
    const res = await generateText({ model: d.model, prompt: '/fail scripted broke', maxRetries: 0 });
    expect(res.text).toBe('secondary answered');
    expect(d.fallbacks).toEqual([{ from: 'scripted', to: 'compatible:m', error: 'scripted broke' }]);
  });

  it('rethrows the last error when every spec fails', async () => {
    const c = chain(['compatible:a', 'compatible:b']);
    server.enqueue({ status: 500, message: 'first down' }, { status: 500, message: 'second down' });
    const out = await streamStep(c.model, 'hi');
    expect(out.text).toBe('');
    expect(out.errors).toHaveLength(1);
    expect(String((out.errors[0] as Error).message)).toMatch(/second down/);
    expect(c.fallbacks).toHaveLength(1);
    await expect(
      generateText({ model: chain(['scripted', 'scripted']).model, prompt: '/fail both', maxRetries: 0 }),
    ).rejects.toThrow(/^both$/);
  });

  it('does not fall back when the call is aborted', async () => {
    const c = chain(['scripted', 'compatible:m']);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const out = await streamStep(c.model, '/sleep 5000', controller.signal);
    expect(out.partTypes).toContain('abort');
    expect(c.fallbacks).toEqual([]);
    expect(server.requests).toHaveLength(0);

    // Aborting an in-flight HTTP primary does not fall back either.
    const h = chain(['compatible:slow', 'scripted']);
    server.enqueue({ text: 'late', delayMs: 2000 });
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 100);
    await expect(generateText({ model: h.model, prompt: 'x', maxRetries: 0, abortSignal: ctl.signal })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(h.fallbacks).toEqual([]);
  });

  it('passes a single-spec chain straight through', async () => {
    const c = chain(['scripted']);
    expect(c.model.modelId).toBe('scripted');
    expect((await streamStep(c.model, 'solo')).text).toBe('echo: solo');
    expect(() => createModelChain([], { tracker: new FallbackTracker() })).toThrow(/at least one/);
  });
});
