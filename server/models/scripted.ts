// The built-in deterministic "scripted" model (CONTRACT §2): an AI SDK v3 provider driven by directives in the prompt.
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4FinishReason,
  LanguageModelV4GenerateResult,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4StreamResult,
  LanguageModelV4ToolResultOutput,
  LanguageModelV4ToolResultPart,
  LanguageModelV4Usage,
} from '@ai-sdk/provider';
import { randomUUID } from 'node:crypto';
import { isCompactionCall, scriptedSummary } from './scripted-summary';
import { isReviewCall, scriptedReview } from './scripted-review';

/** What one model step answers, before it is shaped as a generate result or a stream. */
export interface ScriptedStep {
  /** Reply text; null means "no text part at all" (silent, or only tool calls). */
  text: string | null;
  toolCalls: Array<{ toolCallId: string; toolName: string; input: string }>;
}

type UserMessage = Extract<LanguageModelV4Message, { role: 'user' }>;

const DIRECTIVE = /^\/(tool|reply|sleep|fail|silent)(?:\s+([\s\S]*))?$/;

export function createScriptedModel(): LanguageModelV4 {
  return {
    specificationVersion: 'v4',
    provider: 'crosstalk',
    modelId: 'scripted',
    supportedUrls: {},

    async doGenerate(options: LanguageModelV4CallOptions): Promise<LanguageModelV4GenerateResult> {
      const step = await specialOrPlanned(options);
      const content: LanguageModelV4Content[] = [];
      if (step.text !== null) content.push({ type: 'text', text: step.text });
      for (const call of step.toolCalls) content.push({ type: 'tool-call', ...call });
      return {
        content,
        finishReason: finishReasonOf(step),
        usage: usageOf(options.prompt, step),
        warnings: [],
        response: { id: `scripted-${randomId()}`, timestamp: new Date(), modelId: 'scripted' },
      };
    },

    async doStream(options: LanguageModelV4CallOptions): Promise<LanguageModelV4StreamResult> {
      // Planning (sleep, /fail, bad /tool JSON) happens before the stream exists, so a failing
      // step rejects doStream itself — which is what the fallback chain and run loop key off.
      const step = await specialOrPlanned(options);
      const parts: LanguageModelV4StreamPart[] = [{ type: 'stream-start', warnings: [] }];
      parts.push({ type: 'response-metadata', id: `scripted-${randomId()}`, timestamp: new Date(), modelId: 'scripted' });
      if (step.text !== null) {
        const id = `txt-${randomId()}`;
        parts.push({ type: 'text-start', id });
        for (const delta of splitIntoDeltas(step.text)) parts.push({ type: 'text-delta', id, delta });
        parts.push({ type: 'text-end', id });
      }
      for (const call of step.toolCalls) {
        parts.push({ type: 'tool-input-start', id: call.toolCallId, toolName: call.toolName });
        parts.push({ type: 'tool-input-delta', id: call.toolCallId, delta: call.input });
        parts.push({ type: 'tool-input-end', id: call.toolCallId });
        parts.push({ type: 'tool-call', ...call });
      }
      parts.push({ type: 'finish', finishReason: finishReasonOf(step), usage: usageOf(options.prompt, step) });

      const signal = options.abortSignal;
      let index = 0;
      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        // Pull-based so a consumer that stops reading (or aborts) stops the flow.
        pull(controller) {
          if (signal?.aborted) {
            controller.error(abortError(signal));
            return;
          }
          if (index < parts.length) controller.enqueue(parts[index++]!);
          else controller.close();
        },
      });
      return { stream, request: { body: { prompt: options.prompt } } };
    },
  };
}

/** A compaction or a review call is answered by its own rule; anything else by the prompt's directives. */
async function specialOrPlanned(options: LanguageModelV4CallOptions): Promise<ScriptedStep> {
  if (isCompactionCall(options)) return { text: scriptedSummary(options.prompt), toolCalls: [] };
  if (isReviewCall(options)) return scriptedReview(options);
  return planScriptedStep(options.prompt, options.abortSignal);
}

/** Decides what the step answers; waits for /sleep and throws for /fail or a bad /tool line. */
export async function planScriptedStep(prompt: LanguageModelV4Prompt, signal?: AbortSignal): Promise<ScriptedStep> {
  throwIfAborted(signal);
  const userText = newestUserText(prompt);
  const directives = parseDirectives(userText ?? '');

  const last = prompt[prompt.length - 1];
  if (last?.role === 'tool') {
    // A step after tool calls only reports the results; the user message's other directives
    // (tool, sleep, fail) already ran in the step that made the calls.
    if (directives.silent) return { text: null, toolCalls: [] };
    const lines = trailingToolResults(prompt).map((r) => `${r.toolName}: ${JSON.stringify(toolOutputValue(r.output))}`);
    return { text: lines.length > 0 ? lines.join('\n') : null, toolCalls: [] };
  }

  if (directives.sleepMs > 0) await sleep(directives.sleepMs, signal);
  throwIfAborted(signal);
  if (directives.failure !== null) throw new Error(directives.failure);
  if (directives.toolError !== null) throw new Error(directives.toolError);

  if (!directives.any) {
    return { text: `echo: ${(userText ?? '').trim()}`, toolCalls: [] };
  }
  const toolCalls = directives.tools.map((t) => ({
    toolCallId: `call_${randomId()}`,
    toolName: t.name,
    input: JSON.stringify(t.args),
  }));
  const text = directives.silent || directives.replies.length === 0 ? null : directives.replies.join('\n');
  return { text, toolCalls };
}

interface Directives {
  any: boolean;
  tools: Array<{ name: string; args: Record<string, unknown> }>;
  replies: string[];
  sleepMs: number;
  failure: string | null;
  silent: boolean;
  /** A /tool line that cannot be turned into a call; reported as the step's failure. */
  toolError: string | null;
}

export function parseDirectives(text: string): Directives {
  const d: Directives = { any: false, tools: [], replies: [], sleepMs: 0, failure: null, silent: false, toolError: null };
  for (const rawLine of text.split(/\r?\n/)) {
    const match = DIRECTIVE.exec(rawLine.trim());
    if (!match) continue;
    const [, name, rest = ''] = match;
    d.any = true;
    switch (name) {
      case 'reply':
        d.replies.push(rest);
        break;
      case 'silent':
        d.silent = true;
        break;
      case 'fail':
        // The first /fail wins: a step fails once, with one message.
        if (d.failure === null) d.failure = rest;
        break;
      case 'sleep': {
        const ms = Number(rest.trim());
        if (Number.isFinite(ms) && ms > 0) d.sleepMs += ms;
        break;
      }
      case 'tool': {
        const parsed = parseToolLine(rest);
        if ('error' in parsed) d.toolError ??= parsed.error;
        else d.tools.push(parsed);
        break;
      }
    }
  }
  return d;
}

function parseToolLine(rest: string): { name: string; args: Record<string, unknown> } | { error: string } {
  const m = /^(\S+)(?:\s+([\s\S]*))?$/.exec(rest.trim());
  if (!m) return { error: 'scripted model: /tool needs a tool name: /tool <name> <json-object>' };
  const name = m[1]!;
  const json = (m[2] ?? '').trim();
  // A bare "/tool name" is a call with no arguments; anything given must be a JSON object.
  if (json === '') return { name, args: {} };
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    return { error: `scripted model: /tool ${name} arguments are not valid JSON (${(err as Error).message}): ${json}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { error: `scripted model: /tool ${name} arguments must be a JSON object, got: ${json}` };
  }
  return { name, args: value as Record<string, unknown> };
}

/** Text of the newest user-role message (its text parts joined by newlines), or null if none. */
function newestUserText(prompt: LanguageModelV4Prompt): string | null {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const msg = prompt[i]!;
    if (msg.role !== 'user') continue;
    return (msg as UserMessage).content
      .filter((p): p is Extract<UserMessage['content'][number], { type: 'text' }> => p.type === 'text')
      .map((p) => p.text)
      .join('\n');
  }
  return null;
}

/** Tool results of the trailing run of tool messages, ordered like the calls that produced them. */
function trailingToolResults(prompt: LanguageModelV4Prompt): LanguageModelV4ToolResultPart[] {
  const results: LanguageModelV4ToolResultPart[] = [];
  let i = prompt.length - 1;
  for (; i >= 0 && prompt[i]!.role === 'tool'; i--) {
    const msg = prompt[i] as Extract<LanguageModelV4Message, { role: 'tool' }>;
    const parts = msg.content.filter((p): p is LanguageModelV4ToolResultPart => p.type === 'tool-result');
    results.unshift(...parts);
  }
  // Results may arrive in completion order; the contract wants call order, which the
  // preceding assistant message records.
  const assistant = i >= 0 && prompt[i]!.role === 'assistant' ? prompt[i]! : undefined;
  if (assistant && assistant.role === 'assistant') {
    const order = new Map<string, number>();
    for (const part of assistant.content) if (part.type === 'tool-call') order.set(part.toolCallId, order.size);
    const rank = (r: LanguageModelV4ToolResultPart) => order.get(r.toolCallId) ?? Number.MAX_SAFE_INTEGER;
    return results
      .map((r, idx) => ({ r, idx }))
      .sort((a, b) => rank(a.r) - rank(b.r) || a.idx - b.idx)
      .map((x) => x.r);
  }
  return results;
}

function toolOutputValue(output: LanguageModelV4ToolResultOutput): unknown {
  switch (output.type) {
    case 'text':
    case 'json':
    case 'error-text':
    case 'error-json':
    case 'content':
      return output.value;
    case 'execution-denied':
      return { status: 'denied', reason: output.reason ?? null };
    default:
      return null;
  }
}

/** Splits text into at least three deltas when it can, so consumers see real streaming; concatenation is exact. */
export function splitIntoDeltas(text: string): string[] {
  const words = text.match(/\s*\S+\s*|\s+/g) ?? [];
  if (words.length >= 3) return words;
  const chars = Array.from(text);
  if (chars.length === 0) return [];
  const count = Math.min(3, chars.length);
  const size = Math.ceil(chars.length / count);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

function finishReasonOf(step: ScriptedStep): LanguageModelV4FinishReason {
  return step.toolCalls.length > 0 ? { unified: 'tool-calls', raw: 'tool-calls' } : { unified: 'stop', raw: 'stop' };
}

/**
 * Deterministic rough token count: one token per run of letters, digits and `_`, and one per other character that is
 * not white space — what `/[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu` matches, counted in one pass without building the
 * matches (the prompt is counted at every step: the regex's arrays cost ~0.1 ms a turn on a long session).
 */
export function countTokens(text: string): number {
  let n = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    let word: boolean;
    let space: boolean;
    if (c < 128) {
      word = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
      space = c === 32 || (c >= 9 && c <= 13);
    } else {
      const cp = text.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      if (cp > 0xffff) i++;
      word = WORD_CHAR.test(ch);
      space = !word && SPACE_CHAR.test(ch);
    }
    if (word) {
      if (!inWord) n++;
      inWord = true;
    } else {
      inWord = false;
      if (!space) n++;
    }
  }
  return n;
}
const WORD_CHAR = /[\p{L}\p{N}_]/u;
const SPACE_CHAR = /\s/u;

function usageOf(prompt: LanguageModelV4Prompt, step: ScriptedStep): LanguageModelV4Usage {
  // Each part counted on its own: the parts of the prompt's text are separated by white space, so the sum is the count of the whole.
  const input = promptParts(prompt).reduce((n, part) => n + countTokens(part), 0);
  const output = countTokens(step.text ?? '') + step.toolCalls.reduce((n, c) => n + countTokens(c.toolName + ' ' + c.input), 0);
  return {
    inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: output, text: output, reasoning: 0 },
  };
}

/** The prompt's text, part by part. */
function promptParts(prompt: LanguageModelV4Prompt): string[] {
  const chunks: string[] = [];
  for (const msg of prompt) {
    if (msg.role === 'system') {
      chunks.push(msg.content);
      continue;
    }
    for (const part of msg.content) {
      if (part.type === 'text' || part.type === 'reasoning') chunks.push(part.text);
      else if (part.type === 'tool-call') chunks.push(part.toolName, JSON.stringify(part.input ?? null));
      else if (part.type === 'tool-result') chunks.push(part.toolName, JSON.stringify(toolOutputValue(part.output)));
    }
  }
  return chunks;
}

/** 12 random characters (from a UUID: Node draws those from a pooled buffer, not a call into OpenSSL each time). */
function randomId(): string {
  const u = randomUUID();
  return u.slice(0, 8) + u.slice(9, 13);
}

/** An AbortError like the platform's own, carrying the signal's reason as its cause. */
function abortError(signal?: AbortSignal): Error {
  const err = new Error('The scripted model call was aborted');
  err.name = 'AbortError';
  if (signal?.reason !== undefined) (err as Error & { cause?: unknown }).cause = signal.reason;
  return err;
}

function throwIfAborted(signal?: AbortSignal): void {
  if (signal?.aborted) throw abortError(signal);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
