// One model step straight through the AI SDK's LanguageModel (v3) interface: stream text deltas, collect tool calls.
// The run loop owns the multi-step loop, tools and steering, so streamText's machinery would only add cost here.
import type { JSONSchema7, LanguageModelV4, LanguageModelV4FunctionTool, LanguageModelV4ReasoningPart, LanguageModelV4Usage, SharedV4ProviderOptions } from '@ai-sdk/provider';
import { z } from 'zod';
import type { AnyToolDef } from '../tools/types';
import type { PromptMessage } from './context';

export interface StepToolCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  /** Set when the model's arguments were not valid JSON. */
  invalidError?: string;
  /** Set on the call that stands for those past the per-step cap: it answers `limit_exceeded` and does not run. */
  limitError?: string;
}

/** Tool calls one model step may make (CONTRACT §3); the rest answer `limit_exceeded`. */
export const MAX_TOOL_CALLS_PER_STEP = 64;

/** Calls past the cap that each answer `limit_exceeded` on their own: with the calls that ran and their results, a step's rows still fit the newest 200 a prompt holds. */
export const OVER_CAP_ANSWERED = 32;

/**
 * The calls a step keeps: the first MAX_TOOL_CALLS_PER_STEP run; each of the next OVER_CAP_ANSWERED answers
 * `limit_exceeded` on its own, and the last of those answers for every call after it too, so a step of 10,000 calls
 * writes a bounded number of rows and events.
 */
export function capToolCalls(calls: StepToolCall[]): StepToolCall[] {
  if (calls.length <= MAX_TOOL_CALLS_PER_STEP) return calls;
  const kept = calls.slice(0, MAX_TOOL_CALLS_PER_STEP + OVER_CAP_ANSWERED);
  const cap = `at most ${MAX_TOOL_CALLS_PER_STEP} tool calls per model step`;
  return kept.map((c, i) => {
    if (i < MAX_TOOL_CALLS_PER_STEP) return c;
    const after = i === kept.length - 1 ? calls.length - kept.length : 0;
    return { ...c, limitError: after ? `${cap}: this call and the ${after} after it were not run` : `${cap}: this call was not run` };
  });
}

export interface StepResult {
  text: string;
  calls: StepToolCall[];
  /**
   * The step's reasoning blocks its provider signed (Anthropic's thinking with its signature, or redacted): they go back
   * with the step's tool calls, as Anthropic requires while thinking is on. Unsigned reasoning text is not kept.
   */
  reasoning?: LanguageModelV4ReasoningPart[];
  usage?: { inputTokens?: number; outputTokens?: number; totalTokens?: number; cachedInputTokens?: number };
}

// Function tool definitions, made once per registry (zod → JSON schema is not free).
const cache = new WeakMap<Map<string, AnyToolDef>, { size: number; tools: LanguageModelV4FunctionTool[] }>();
export function functionTools(tools: Map<string, AnyToolDef>): LanguageModelV4FunctionTool[] {
  const hit = cache.get(tools);
  if (hit && hit.size === tools.size) return hit.tools;
  const list = [...tools.values()].map((def) => ({
    type: 'function' as const,
    name: def.name,
    description: def.description,
    inputSchema: (def.jsonSchema ?? z.toJSONSchema(def.inputSchema, { io: 'input', unrepresentable: 'any' })) as JSONSchema7,
  }));
  cache.set(tools, { size: tools.size, tools: list });
  return list;
}

/** Forgets the cached definitions of a registry whose tools changed (an MCP server's tool list). */
export function invalidateFunctionTools(tools: Map<string, AnyToolDef>): void {
  cache.delete(tools);
}

function usageOf(u: LanguageModelV4Usage | undefined): StepResult['usage'] {
  if (!u) return undefined;
  const input = u.inputTokens?.total;
  const output = u.outputTokens?.total;
  const cached = u.inputTokens?.cacheRead;
  return { inputTokens: input, outputTokens: output, totalTokens: input !== undefined && output !== undefined ? input + output : undefined, ...(cached ? { cachedInputTokens: cached } : {}) };
}

export async function streamStep(
  model: LanguageModelV4,
  o: {
    system: string;
    messages: PromptMessage[];
    tools: LanguageModelV4FunctionTool[];
    signal: AbortSignal;
    onDelta(delta: string): void;
    /** The session's thinking level for the provider (../models/thinking.ts); absent: the provider's default. */
    providerOptions?: SharedV4ProviderOptions;
  },
): Promise<StepResult> {
  const { stream } = await model.doStream({
    prompt: [{ role: 'system', content: o.system }, ...o.messages],
    tools: o.tools,
    toolChoice: { type: 'auto' },
    abortSignal: o.signal,
    ...(o.providerOptions ? { providerOptions: o.providerOptions } : {}),
  });
  let text = '';
  const calls: StepToolCall[] = [];
  let usage: StepResult['usage'];
  // Reasoning blocks by id, in the order they started; their provider metadata (a signature) merged as it streams.
  let thoughts: Map<string, { text: string; meta?: SharedV4ProviderOptions }> | undefined;
  const thought = (id: string, delta: string, meta: SharedV4ProviderOptions | undefined) => {
    let t = (thoughts ??= new Map()).get(id);
    if (!t) thoughts.set(id, (t = { text: '' }));
    t.text += delta;
    if (meta) for (const [k, v] of Object.entries(meta)) (t.meta ??= {})[k] = { ...t.meta?.[k], ...v };
  };
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value: part } = await reader.read();
      if (done) break;
      switch (part.type) {
        case 'text-delta':
          if (part.delta) {
            text += part.delta;
            o.onDelta(part.delta);
          }
          break;
        case 'tool-call': {
          if (part.providerExecuted) break;
          let input: unknown = {};
          let invalidError: string | undefined;
          try {
            input = part.input.trim() ? JSON.parse(part.input) : {};
          } catch (e) {
            invalidError = `arguments are not valid JSON: ${(e as Error).message}`;
            input = part.input;
          }
          calls.push({ toolCallId: part.toolCallId, toolName: part.toolName, input, ...(invalidError ? { invalidError } : {}) });
          break;
        }
        case 'reasoning-start':
        case 'reasoning-end':
          thought(part.id, '', part.providerMetadata);
          break;
        case 'reasoning-delta':
          thought(part.id, part.delta, part.providerMetadata);
          break;
        case 'finish':
          usage = usageOf(part.usage);
          break;
        case 'error':
          throw part.error instanceof Error ? part.error : new Error(typeof part.error === 'string' ? part.error : JSON.stringify(part.error));
        default:
          break;
      }
    }
  } finally {
    reader.releaseLock();
  }
  const reasoning = thoughts && [...thoughts.values()].filter((t) => t.meta).map((t): LanguageModelV4ReasoningPart => ({ type: 'reasoning', text: t.text, providerOptions: t.meta }));
  return { text, calls, usage, ...(reasoning?.length ? { reasoning } : {}) };
}
