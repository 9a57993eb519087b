// Tests model spec parsing, validation and resolution to providers.
import { describe, expect, it } from 'vitest';
import { parseModelSpec, resolveModel, validateModelSpec } from './registry';

describe('resolveModel', () => {
  it('resolves scripted to the built-in model', () => {
    const model = resolveModel('scripted', {});
    expect(model).toMatchObject({ specificationVersion: 'v4', provider: 'crosstalk', modelId: 'scripted' });
  });

  it('resolves openai:<model> to a chat-completions model', () => {
    const model = resolveModel('openai:gpt-4o-mini', { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' });
    expect(model.specificationVersion).toBe('v4');
    expect(model.provider).toBe('openai.chat');
    expect(model.modelId).toBe('gpt-4o-mini');
  });

  it('resolves anthropic:<model>', () => {
    const model = resolveModel('anthropic:claude-sonnet-4-5', { ANTHROPIC_API_KEY: 'k' });
    expect(model.provider).toMatch(/^anthropic/);
    expect(model.modelId).toBe('claude-sonnet-4-5');
  });

  it('resolves compatible:<model> with a base URL, keeping model ids that contain colons', () => {
    const model = resolveModel('compatible:llama3.1:8b', { CROSSTALK_COMPAT_BASE_URL: 'http://127.0.0.1:11434/v1' });
    expect(model.provider).toMatch(/^compatible/);
    expect(model.modelId).toBe('llama3.1:8b');
  });

  it('reuses one model per spec and settings, and a changed setting gets a fresh one', () => {
    const env = { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' };
    const a = resolveModel('openai:gpt-4o-mini', env);
    expect(resolveModel('openai:gpt-4o-mini', { ...env })).toBe(a);
    expect(resolveModel('openai:gpt-4o', env)).not.toBe(a);
    expect(resolveModel('openai:gpt-4o-mini', { ...env, OPENAI_BASE_URL: 'http://127.0.0.1:2/v1' })).not.toBe(a);
    expect(resolveModel('scripted', {})).toBe(resolveModel('scripted', {}));
  });

  it('throws a clear error for unknown prefixes, empty model names and a missing compatible base URL', () => {
    expect(() => resolveModel('gemini:pro', {})).toThrow(/unknown model provider "gemini"/);
    expect(() => resolveModel('gpt-4o', {})).toThrow(/unknown model spec "gpt-4o"/);
    expect(() => resolveModel('openai:', {})).toThrow(/names no model/);
    expect(() => resolveModel('compatible:llama3', {})).toThrow(/CROSSTALK_COMPAT_BASE_URL/);
  });
});

describe('validateModelSpec', () => {
  it('returns null for usable specs and error text otherwise', () => {
    expect(validateModelSpec('scripted', {})).toBeNull();
    expect(validateModelSpec('openai:gpt-4o', {})).toBeNull();
    expect(validateModelSpec('anthropic:claude', {})).toBeNull();
    expect(validateModelSpec('compatible:qwen', { CROSSTALK_COMPAT_BASE_URL: 'http://x/v1' })).toBeNull();
    expect(validateModelSpec('compatible:qwen', {})).toMatch(/CROSSTALK_COMPAT_BASE_URL/);
    expect(validateModelSpec('', {})).toMatch(/non-empty/);
    expect(validateModelSpec('nope:x', {})).toMatch(/unknown model provider/);
  });

  it('parses specs', () => {
    expect(parseModelSpec(' openai:gpt-4o ')).toEqual({ ok: true, spec: { kind: 'openai', model: 'gpt-4o' } });
    expect(parseModelSpec('scripted')).toEqual({ ok: true, spec: { kind: 'scripted', model: '' } });
    expect(parseModelSpec('scripted:x').ok).toBe(false);
  });
});

describe('provider models load their SDK with their first step', () => {
  it('names the same provider and model before and after loading, and streams through the real one', async () => {
    const { startFakeOpenAI } = await import('./testing/fake-openai-server');
    const fake = await startFakeOpenAI();
    try {
      const model = resolveModel('openai:gpt-lazy', { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: fake.baseURL });
      expect([model.provider, model.modelId]).toEqual(['openai.chat', 'gpt-lazy']);
      fake.enqueue({ text: 'hello there' });
      const { stream } = await model.doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] });
      const reader = stream.getReader();
      let text = '';
      for (let r = await reader.read(); !r.done; r = await reader.read()) if (r.value.type === 'text-delta') text += r.value.delta;
      expect(text).toBe('hello there');
      expect(fake.requests.at(-1)?.body).toMatchObject({ model: 'gpt-lazy' });
      expect(resolveModel('openai:gpt-lazy', { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: fake.baseURL })).toBe(model);
    } finally {
      await fake.close();
    }
  });
});
