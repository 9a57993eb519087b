// The AI SDK's provider models behind a spec's settings (loaded with a provider model's first step: ./registry.ts).
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV4 } from '@ai-sdk/provider';

/** What a provider model is made from: its kind, the provider's model id, and its key and base URL from the env. */
export interface ProviderModelSettings {
  kind: 'openai' | 'anthropic' | 'compatible';
  model: string;
  apiKey: string | undefined;
  baseURL: string | undefined;
}

// Providers are stateless (settings only), so one per settings serves every model of it.
const providers = new Map<string, unknown>();
function provider<T>(key: string, create: () => T): T {
  let p = providers.get(key) as T | undefined;
  if (p === undefined) providers.set(key, (p = create()));
  return p;
}

export function providerModel({ kind, model, apiKey, baseURL }: ProviderModelSettings): LanguageModelV4 {
  const key = `${kind}|${baseURL ?? ''}|${apiKey ?? ''}`;
  switch (kind) {
    case 'openai':
      // Chat completions rather than the Responses API: it is what OpenAI-compatible bases speak.
      return provider(key, () => createOpenAI({ apiKey, baseURL })).chat(model);
    case 'anthropic':
      return provider(key, () => createAnthropic({ apiKey, baseURL }))(model);
    case 'compatible':
      return provider(key, () => createOpenAICompatible({ name: 'compatible', baseURL: baseURL!, apiKey, includeUsage: true })).chatModel(model);
  }
}
