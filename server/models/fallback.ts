// A fallback chain over model specs (CONTRACT §1): the first spec is primary, the rest are tried in order when a call fails.
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamPart,
  LanguageModelV4StreamResult,
} from '@ai-sdk/provider';
import { resolveModel, type ModelEnv } from './registry';

export interface FallbackInfo {
  from: string;
  to: string;
  error: string;
}

export interface ModelChainOptions {
  env?: ModelEnv;
  tracker: FallbackTracker;
  onFallback?(info: FallbackInfo): void;
  onFallbackCleared?(info: { model: string }): void;
}

/**
 * Remembers, per agent and across runs, whether calls are currently being served by a fallback,
 * so a later success on the primary can be announced once as `fallback_cleared`.
 */
export class FallbackTracker {
  private fallbackModel: string | null = null;

  /** The spec that last served a call instead of the primary, or null while on the primary. */
  get activeFallback(): string | null {
    return this.fallbackModel;
  }

  recordFallback(model: string): void {
    this.fallbackModel = model;
  }

  /** Marks the primary healthy again; true when a fallback had been recorded (i.e. announce it). */
  clear(): boolean {
    const had = this.fallbackModel !== null;
    this.fallbackModel = null;
    return had;
  }
}

export function createModelChain(specs: string[], opts: ModelChainOptions): LanguageModelV4 {
  if (specs.length === 0) throw new Error('createModelChain: at least one model spec is required');
  const env = opts.env ?? process.env;
  const primary = specs[0]!;
  // Resolution is lazy and per spec, so a spec that cannot resolve (missing base URL) is just
  // one more failing call the chain routes around, not a crash when the chain is built.
  const models = new Map<string, LanguageModelV4>();
  const modelFor = (spec: string): LanguageModelV4 => {
    let model = models.get(spec);
    if (!model) {
      model = resolveModel(spec, env);
      models.set(spec, model);
    }
    return model;
  };

  if (specs.length === 1) {
    // Nothing to fall back to: delegate straight through so the provider's own stream
    // (including in-stream error parts) reaches the caller untouched.
    return {
      specificationVersion: 'v4',
      provider: 'crosstalk',
      modelId: primary,
      supportedUrls: {},
      doGenerate: (options) => modelFor(primary).doGenerate(options),
      doStream: (options) => modelFor(primary).doStream(options),
    };
  }

  const succeeded = (index: number) => {
    if (index === 0 && opts.tracker.clear()) opts.onFallbackCleared?.({ model: primary });
  };

  // Runs `attempt` against each spec in turn; abort errors stop the chain at once.
  async function run<T>(options: LanguageModelV4CallOptions, attempt: (model: LanguageModelV4) => Promise<T>): Promise<T> {
    let lastError: unknown;
    for (let i = 0; i < specs.length; i++) {
      const spec = specs[i]!;
      try {
        const result = await attempt(modelFor(spec));
        succeeded(i);
        return result;
      } catch (err) {
        if (isAbort(err, options.abortSignal)) throw err;
        lastError = err;
        const next = specs[i + 1];
        if (next === undefined) break;
        opts.tracker.recordFallback(next);
        opts.onFallback?.({ from: spec, to: next, error: errorText(err) });
      }
    }
    throw lastError;
  }

  return {
    specificationVersion: 'v4',
    provider: 'crosstalk',
    modelId: primary,
    supportedUrls: {},
    doGenerate: (options): Promise<LanguageModelV4GenerateResult> =>
      run(options, async (model) => model.doGenerate(options)),
    doStream: (options): Promise<LanguageModelV4StreamResult> =>
      run(options, async (model) => startStream(await model.doStream(options))),
  };
}

/**
 * Reads a stream until its first content part (or its end). Until then a failure is still
 * "this model failed" and may fall back; once content has flowed to the caller it may not,
 * because the caller would see two models' output spliced together.
 */
async function startStream(result: LanguageModelV4StreamResult): Promise<LanguageModelV4StreamResult> {
  const reader = result.stream.getReader();
  const buffered: LanguageModelV4StreamPart[] = [];
  let done = false;
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) {
        done = true;
        break;
      }
      const part = next.value;
      if (part.type === 'error') throw part.error;
      buffered.push(part);
      if (isContentPart(part)) break;
    }
  } catch (err) {
    reader.cancel(err).catch(() => {});
    throw err;
  }

  const stream = new ReadableStream<LanguageModelV4StreamPart>({
    async pull(controller) {
      const part = buffered.shift();
      if (part) {
        controller.enqueue(part);
        return;
      }
      if (done) {
        controller.close();
        return;
      }
      try {
        const next = await reader.read();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      } catch (err) {
        controller.error(err);
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return { ...result, stream };
}

function isContentPart(part: LanguageModelV4StreamPart): boolean {
  // `finish` counts: a stream that finished cleanly with no content (a silent step) succeeded.
  return part.type !== 'stream-start' && part.type !== 'response-metadata' && part.type !== 'raw';
}

function isAbort(err: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted) return true;
  return err instanceof Error && (err.name === 'AbortError' || err.name === 'ResponseAborted');
}

function errorText(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
}
