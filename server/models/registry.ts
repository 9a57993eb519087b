// Turns a model spec string ("scripted", "openai:gpt-4o", …) into an AI SDK (LanguageModel v4) model (CONTRACT §1).
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { lazyModel } from './lazy-model';
import type { ProviderModelSettings } from './providers';
import { createScriptedModel } from './scripted';

export type ModelEnv = Record<string, string | undefined>;

export type ModelSpecKind = 'scripted' | 'openai' | 'anthropic' | 'compatible';

export interface ParsedModelSpec {
  kind: ModelSpecKind;
  /** The provider's model id; empty for `scripted`. */
  model: string;
}

const PREFIXED_KINDS = ['openai', 'anthropic', 'compatible'] as const;
type PrefixedKind = (typeof PREFIXED_KINDS)[number];

/** Parses a spec or returns the reason it is not one. Pure syntax: no environment check. */
export function parseModelSpec(spec: string): { ok: true; spec: ParsedModelSpec } | { ok: false; error: string } {
  if (typeof spec !== 'string' || spec.trim() === '') return { ok: false, error: 'model spec must be a non-empty string' };
  const trimmed = spec.trim();
  if (trimmed === 'scripted') return { ok: true, spec: { kind: 'scripted', model: '' } };
  const colon = trimmed.indexOf(':');
  if (colon < 0) {
    return { ok: false, error: `unknown model spec "${trimmed}": use "scripted", "openai:<model>", "anthropic:<model>" or "compatible:<model>"` };
  }
  const prefix = trimmed.slice(0, colon);
  const model = trimmed.slice(colon + 1).trim();
  if (!(PREFIXED_KINDS as readonly string[]).includes(prefix)) {
    return { ok: false, error: `unknown model provider "${prefix}" in "${trimmed}": use openai, anthropic or compatible` };
  }
  if (model === '') return { ok: false, error: `model spec "${trimmed}" names no model: use "${prefix}:<model>"` };
  return { ok: true, spec: { kind: prefix as PrefixedKind, model } };
}

/**
 * Error text for a spec that cannot be used, or null when it can. Checks the settings a spec
 * needs up front (the compatible base URL) so config loading and sessions.patch can refuse it
 * instead of failing on the first run. API keys are left to the call: a missing key is an
 * ordinary model error that the fallback chain may route around.
 */
export function validateModelSpec(spec: string, env: ModelEnv = process.env): string | null {
  const parsed = parseModelSpec(spec);
  if (!parsed.ok) return parsed.error;
  if (parsed.spec.kind === 'compatible' && !nonEmpty(env.CROSSTALK_COMPAT_BASE_URL)) {
    return `model "${spec.trim()}" needs CROSSTALK_COMPAT_BASE_URL (the OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1)`;
  }
  return null;
}

/** Resolves a spec to a model; throws an Error with the validation message for a bad spec. */
export function resolveModel(spec: string, env: ModelEnv = process.env): LanguageModelV4 {
  const error = validateModelSpec(spec, env);
  if (error) throw new Error(error);
  const { kind, model } = (parseModelSpec(spec) as { ok: true; spec: ParsedModelSpec }).spec;
  // The model objects are stateless (settings + model id), so one per spec and settings serves every
  // run: building the provider's model entry on each run cost ~0.4 ms a turn (bench/profile-provider.ts).
  if (kind === 'scripted') return cached('scripted', () => createScriptedModel());
  const settings: ProviderModelSettings =
    kind === 'openai'
      ? { kind, model, apiKey: nonEmpty(env.OPENAI_API_KEY), baseURL: nonEmpty(env.OPENAI_BASE_URL) }
      : kind === 'anthropic'
        ? { kind, model, apiKey: nonEmpty(env.ANTHROPIC_API_KEY), baseURL: nonEmpty(env.ANTHROPIC_BASE_URL) }
        : { kind, model, apiKey: nonEmpty(env.CROSSTALK_COMPAT_API_KEY), baseURL: env.CROSSTALK_COMPAT_BASE_URL!.trim() };
  return cached(`${kind}|${settings.baseURL ?? ''}|${settings.apiKey ?? ''}|${model}`, () => lazyProviderModel(settings));
}

/** The `provider` each SDK's model names itself with (the same before its module is loaded). */
const PROVIDER_NAMES = { openai: 'openai.chat', anthropic: 'anthropic.messages', compatible: 'compatible.chat' } as const;

let providers: Promise<typeof import('./providers')> | undefined;
const loadProviders = () => (providers ??= import('./providers'));

/**
 * A provider's model whose SDK (the AI SDK's OpenAI, Anthropic and OpenAI-compatible providers, with the schemas they
 * build as they load: ~60–100 ms of a start on a slow machine, BENCHMARKS.md 'Stop 42') loads with its first step, not
 * at start: a server whose first requests run scripted or A2A models never loads it (issue 24.5).
 */
function lazyProviderModel(settings: ProviderModelSettings): LanguageModelV4 {
  return lazyModel(PROVIDER_NAMES[settings.kind], settings.model, async () => (await loadProviders()).providerModel(settings));
}

// Models are keyed by their settings so a changed env (tests, reconfiguration) gets a fresh one.
const models = new Map<string, LanguageModelV4>();

function cached(key: string, create: () => LanguageModelV4): LanguageModelV4 {
  let model = models.get(key);
  if (model === undefined) models.set(key, (model = create()));
  return model;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== '' ? value.trim() : undefined;
}
