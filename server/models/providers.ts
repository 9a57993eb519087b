// The AI SDK's provider models behind a spec's settings (loaded with a provider model's first step: ./registry.ts).
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { openaiTakesReasoningEffort, withoutReasoningEffort } from './thinking';

/** What a provider model is made from: its kind, the provider's model id, and its key and base URL from the env. */
export interface ProviderModelSettings {
  kind: 'openai' | 'anthropic' | 'compatible';
  model: string;
  apiKey: string | undefined;
  baseURL: string | undefined;
}

/** The SDK's model for these settings (the registry keeps one per spec and settings). */
export function providerModel({ kind, model, apiKey, baseURL }: ProviderModelSettings): LanguageModelV4 {
  switch (kind) {
    case 'openai': {
      // Chat completions rather than the Responses API: it is what OpenAI-compatible bases speak.
      const chat = createOpenAI({ apiKey, baseURL }).chat(model);
      // A session's thinkingLevel (./thinking.ts) is left out for the chat models OpenAI refuses it for.
      return openaiTakesReasoningEffort(model) ? chat : withoutReasoningEffort(chat);
    }
    case 'anthropic':
      return createAnthropic({ apiKey, baseURL })(model);
    case 'compatible':
      return createOpenAICompatible({ name: 'compatible', baseURL: baseURL!, apiKey, includeUsage: true }).chatModel(model);
  }
}
