// A model whose module loads with its first step (issue 24.5: nothing at start that a first request does not need).
import type { LanguageModelV4 } from '@ai-sdk/provider';

/**
 * A model named `provider` / `modelId` from the start, made by `make` (which loads its module) on the first
 * `doStream` or `doGenerate`, and that one used from then on.
 */
export function lazyModel(provider: string, modelId: string, make: () => Promise<LanguageModelV4>): LanguageModelV4 {
  let real: LanguageModelV4 | undefined;
  // Kept once made (a failed load is tried again at the next step).
  const model = async () => (real ??= await make());
  return {
    specificationVersion: 'v4',
    provider,
    modelId,
    supportedUrls: {},
    doStream: async (options) => (await model()).doStream(options),
    doGenerate: async (options) => (await model()).doGenerate(options),
  };
}
