// Context windows and prices per model spec: built-in windows for known models, `models.<spec>` in the config wins.
import type { ModelSettings } from '../config';

export interface StepTokens {
  inputTokens: number;
  outputTokens: number;
  /** Input tokens the provider served from its prompt cache (a part of inputTokens). */
  cachedTokens: number;
}

export interface Price {
  inputPerMTok: number;
  outputPerMTok: number;
  cachedInputPerMTok?: number;
}

export const SCRIPTED_CONTEXT_WINDOW = 32_000;
const FALLBACK_CONTEXT_WINDOW = 8_192;

// Published context windows (tokens), matched by prefix on the model id; the longest prefix wins.
const KNOWN_WINDOWS: Array<[string, number]> = [
  ['gpt-5', 400_000],
  ['gpt-4.1', 1_047_576],
  ['gpt-4o', 128_000],
  ['gpt-4-turbo', 128_000],
  ['gpt-4', 8_192],
  ['gpt-3.5-turbo', 16_385],
  ['o1', 200_000],
  ['o3', 200_000],
  ['o4-mini', 200_000],
  ['claude-opus-4', 200_000],
  ['claude-sonnet-4', 200_000],
  ['claude-3-7-sonnet', 200_000],
  ['claude-3-5-sonnet', 200_000],
  ['claude-3-5-haiku', 200_000],
  ['claude-haiku-4', 200_000],
  ['claude-3', 200_000],
  // Every Claude model since 2.1, and the ones still to come under the same name (README: `claude-*`).
  ['claude-', 200_000],
  ['claude-2.0', 100_000],
  ['claude-instant', 100_000],
];

/** The context window of a spec: `models.<spec>.contextWindow`, else the built-in value, else a conservative 8,192. */
export function contextWindowFor(spec: string, models: Record<string, ModelSettings>): number {
  const configured = models[spec]?.contextWindow;
  if (configured) return configured;
  if (spec === 'scripted') return SCRIPTED_CONTEXT_WINDOW;
  const id = spec.slice(spec.indexOf(':') + 1);
  let best: [string, number] | undefined;
  for (const k of KNOWN_WINDOWS) if (id.startsWith(k[0]) && (!best || k[0].length > best[0].length)) best = k;
  return best?.[1] ?? FALLBACK_CONTEXT_WINDOW;
}

/** The configured price of a spec, or null when the config names none (its cost then counts as 0). */
export function priceFor(spec: string, models: Record<string, ModelSettings>): Price | null {
  const m = models[spec];
  if (!m || (m.inputPerMTok === undefined && m.outputPerMTok === undefined)) return null;
  return { inputPerMTok: m.inputPerMTok ?? 0, outputPerMTok: m.outputPerMTok ?? 0, ...(m.cachedInputPerMTok !== undefined ? { cachedInputPerMTok: m.cachedInputPerMTok } : {}) };
}

/** USD for one step: uncached input at the input price, cached input at the cached price (input price when none), output at the output price. */
export function costOf(t: StepTokens, price: Price | null): number {
  if (!price) return 0;
  const cached = Math.min(t.cachedTokens, t.inputTokens);
  const uncached = t.inputTokens - cached;
  const usd = (uncached * price.inputPerMTok + cached * (price.cachedInputPerMTok ?? price.inputPerMTok) + t.outputTokens * price.outputPerMTok) / 1_000_000;
  return roundUsd(usd);
}

/** Cost sums are shown to a person: round away float noise (1e-10 USD is far below any price). */
export const roundUsd = (usd: number) => Math.round(usd * 1e10) / 1e10;
