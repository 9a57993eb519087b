// A session's thinkingLevel (sessions.patch) as the AI SDK's providerOptions for a run's own model steps.
import type { LanguageModelV4, LanguageModelV4CallOptions, SharedV4ProviderOptions } from '@ai-sdk/provider';

/** The levels sessions.patch takes (null clears the level). */
export const THINKING_LEVELS = ['off', 'minimal', 'low', 'medium', 'high'] as const;
export type ThinkingLevel = (typeof THINKING_LEVELS)[number];
type OnLevel = Exclude<ThinkingLevel, 'off'>;

/** Anthropic's extended-thinking budget per level (its floor is 1024 tokens; the SDK adds it to max_tokens). */
export const ANTHROPIC_THINKING_BUDGETS: Readonly<Record<OnLevel, number>> = { minimal: 1024, low: 4096, medium: 10_000, high: 24_000 };

/** Gemini's thinkingBudget per level (within 2.5 Flash's 0–24576 and 2.5 Pro's 128–32768). */
export const GOOGLE_THINKING_BUDGETS: Readonly<Record<OnLevel, number>> = { minimal: 512, low: 2048, medium: 8192, high: 24_576 };

function optionsFor(level: OnLevel): SharedV4ProviderOptions {
  return Object.freeze({
    openai: { reasoningEffort: level },
    anthropic: { thinking: { type: 'enabled', budgetTokens: ANTHROPIC_THINKING_BUDGETS[level] } },
    google: { thinkingConfig: { thinkingBudget: GOOGLE_THINKING_BUDGETS[level] } },
  });
}

// Made once: a step passes the same object for its level, nothing is built on the hot path.
const BY_LEVEL = new Map<string, SharedV4ProviderOptions>(THINKING_LEVELS.filter((l): l is OnLevel => l !== 'off').map((l) => [l, optionsFor(l)]));

/**
 * The providerOptions of a step for a session's level, keyed by provider so one object serves every model of a
 * fallback chain (each SDK provider reads its own key only). Undefined for no level, `off`, or a value stored before
 * levels were checked: the provider's default.
 */
export function thinkingProviderOptions(level: string | null | undefined): SharedV4ProviderOptions | undefined {
  return level ? BY_LEVEL.get(level) : undefined;
}

/**
 * Whether an OpenAI model id may take `reasoning_effort`. The SDK sends it for any id; OpenAI refuses it (400) for
 * its chat models (gpt-3.5, gpt-4*, chatgpt-4o, gpt-5-chat), so those leave it out. Other ids (o-series, gpt-5 and
 * later, unknown ids behind OPENAI_BASE_URL) get it.
 */
export function openaiTakesReasoningEffort(modelId: string): boolean {
  return !/^(?:chat)?gpt-(?:3|4)(?:[.o-]|$)|^gpt-\d+-chat(?:-|$)/.test(modelId);
}

/** The model with `providerOptions.openai.reasoningEffort` left out of its calls (an OpenAI chat model: see above). */
export function withoutReasoningEffort(model: LanguageModelV4): LanguageModelV4 {
  const strip = (o: LanguageModelV4CallOptions): LanguageModelV4CallOptions => {
    const openai = o.providerOptions?.openai;
    if (!openai || !('reasoningEffort' in openai)) return o;
    const { reasoningEffort: _, ...rest } = openai;
    return { ...o, providerOptions: { ...o.providerOptions, openai: rest } };
  };
  return {
    specificationVersion: model.specificationVersion,
    provider: model.provider,
    modelId: model.modelId,
    supportedUrls: model.supportedUrls,
    doStream: (o) => model.doStream(strip(o)),
    doGenerate: (o) => model.doGenerate(strip(o)),
  };
}
