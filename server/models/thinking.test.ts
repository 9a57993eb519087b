// The thinkingLevel → providerOptions mapping per provider, and the OpenAI chat models that must not get reasoning_effort.
import type { LanguageModelV4, LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { ANTHROPIC_THINKING_BUDGETS, GOOGLE_THINKING_BUDGETS, openaiTakesReasoningEffort, thinkingProviderOptions, withoutReasoningEffort } from './thinking';

describe('thinkingProviderOptions', () => {
  it('maps each level to Anthropic thinking with a growing budget', () => {
    expect(thinkingProviderOptions('minimal')?.anthropic).toEqual({ thinking: { type: 'enabled', budgetTokens: 1024 } });
    expect(thinkingProviderOptions('low')?.anthropic).toEqual({ thinking: { type: 'enabled', budgetTokens: 4096 } });
    expect(thinkingProviderOptions('medium')?.anthropic).toEqual({ thinking: { type: 'enabled', budgetTokens: 10_000 } });
    expect(thinkingProviderOptions('high')?.anthropic).toEqual({ thinking: { type: 'enabled', budgetTokens: 24_000 } });
    // Anthropic's floor is 1024 tokens.
    expect(Math.min(...Object.values(ANTHROPIC_THINKING_BUDGETS))).toBeGreaterThanOrEqual(1024);
  });

  it('maps each level to a Gemini thinkingBudget', () => {
    expect(thinkingProviderOptions('minimal')?.google).toEqual({ thinkingConfig: { thinkingBudget: 512 } });
    expect(thinkingProviderOptions('low')?.google).toEqual({ thinkingConfig: { thinkingBudget: 2048 } });
    expect(thinkingProviderOptions('medium')?.google).toEqual({ thinkingConfig: { thinkingBudget: 8192 } });
    expect(thinkingProviderOptions('high')?.google).toEqual({ thinkingConfig: { thinkingBudget: 24_576 } });
    expect(Math.max(...Object.values(GOOGLE_THINKING_BUDGETS))).toBeLessThanOrEqual(24_576);
  });

  it('passes the level to OpenAI as reasoningEffort', () => {
    for (const level of ['minimal', 'low', 'medium', 'high']) expect(thinkingProviderOptions(level)?.openai).toEqual({ reasoningEffort: level });
  });

  it('sends nothing for off, no level, or a value stored before levels were checked', () => {
    for (const level of ['off', null, undefined, '', 'turbo']) expect(thinkingProviderOptions(level)).toBeUndefined();
  });

  it('hands out one object per level (nothing built per step)', () => {
    expect(thinkingProviderOptions('high')).toBe(thinkingProviderOptions('high'));
    expect(Object.isFrozen(thinkingProviderOptions('high'))).toBe(true);
  });
});

describe('OpenAI reasoning_effort', () => {
  it('is for reasoning and unknown models, not the chat models OpenAI refuses it for', () => {
    for (const id of ['o1', 'o3-mini', 'o4-mini', 'gpt-5', 'gpt-5-mini', 'gpt-5.1', 'gpt-test', 'my-proxy-model']) expect(openaiTakesReasoningEffort(id), id).toBe(true);
    for (const id of ['gpt-4o', 'gpt-4o-mini', 'gpt-4', 'gpt-4-turbo', 'gpt-4.1', 'gpt-3.5-turbo', 'chatgpt-4o-latest', 'gpt-5-chat-latest']) expect(openaiTakesReasoningEffort(id), id).toBe(false);
  });

  it('withoutReasoningEffort drops only reasoningEffort from the openai options', async () => {
    const seen: LanguageModelV4CallOptions[] = [];
    const inner = { specificationVersion: 'v4', provider: 'openai.chat', modelId: 'gpt-4o', supportedUrls: {}, doStream: async (o: LanguageModelV4CallOptions) => (seen.push(o), {} as never), doGenerate: async (o: LanguageModelV4CallOptions) => (seen.push(o), {} as never) } as LanguageModelV4;
    const model = withoutReasoningEffort(inner);
    expect([model.provider, model.modelId]).toEqual(['openai.chat', 'gpt-4o']);
    await model.doStream({ prompt: [], providerOptions: { openai: { reasoningEffort: 'high', user: 'u' }, anthropic: { x: 1 } } });
    await model.doGenerate({ prompt: [] });
    expect(seen[0]!.providerOptions).toEqual({ openai: { user: 'u' }, anthropic: { x: 1 } });
    expect(seen[1]!.providerOptions).toBeUndefined();
  });
});
