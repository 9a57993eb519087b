// One error type for every domain failure; its `code` is a CONTRACT §6 code, mapped in one place per transport.

export const ERROR_CODES = [
  'invalid_request',
  'unknown_agent',
  'unknown_session',
  'unknown_conversation',
  'unknown_run',
  'unknown_approval',
  'unknown_channel',
  'invalid_cursor',
  'agent_busy',
  'rate_limited',
  'limit_exceeded',
  'already_resolved',
  'not_cancelable',
  'payload_too_large',
  'unauthorized',
  'forbidden',
  'channel_error',
  'timeout',
  'interrupted',
  'tool_unavailable',
  'internal',
  'unknown_delivery',
  'not_retryable',
  'budget_exceeded',
  'tool_error',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** A word with its indefinite article, for refusal texts: "an elicitation", "a budget", "an integer". */
export const withArticle = (word: string) => `${/^[aeiou]/i.test(word) ? 'an' : 'a'} ${word}`;

export interface ValidationIssue {
  path: string;
  message: string;
}

// A registry-wide brand: Next may bundle this module more than once, so `instanceof` is not enough.
const BRAND = Symbol.for('crosstalk.error');

export class CrosstalkError extends Error {
  readonly code: ErrorCode;
  readonly issues?: ValidationIssue[];
  /** A failed hand-off's delivery record (CONTRACT §9), when one was made: a tool's failure result names it. */
  deliveryId?: string;
  readonly [BRAND] = true;

  constructor(code: ErrorCode, message: string, issues?: ValidationIssue[]) {
    super(message);
    this.name = 'CrosstalkError';
    this.code = code;
    this.issues = issues;
  }
}

export const isCrosstalkError = (e: unknown): e is CrosstalkError =>
  typeof e === 'object' && e !== null && (e as Record<symbol, unknown>)[BRAND] === true;

/**
 * The §6 code a failed run's `error` answers with where a failure is handed on (a sync send, a standard delegate, the
 * target-failed event): its own when it is one (`budget_exceeded`, `interrupted`, `timeout` …), `interrupted` for a
 * cancel, `internal` for the rest (a model's failure, say: its text is in the message).
 */
export function runErrorCode(error: string | undefined): ErrorCode {
  if (error === 'cancelled') return 'interrupted';
  return error && (ERROR_CODES as readonly string[]).includes(error) ? (error as ErrorCode) : 'internal';
}

/** JSON-RPC error code for a domain code (CONTRACT §3). */
export function jsonRpcCodeFor(code: ErrorCode): number {
  switch (code) {
    case 'invalid_request':
    case 'invalid_cursor':
      return -32602;
    case 'payload_too_large':
      return -32600;
    case 'unauthorized':
    case 'forbidden':
      return -32001;
    case 'unknown_agent':
    case 'unknown_session':
    case 'unknown_conversation':
    case 'unknown_run':
    case 'unknown_approval':
    case 'unknown_channel':
    case 'unknown_delivery':
      return -32004;
    case 'agent_busy':
    case 'already_resolved':
    case 'not_cancelable':
    case 'rate_limited':
    case 'limit_exceeded':
    case 'not_retryable':
    case 'budget_exceeded':
      return -32009;
    case 'timeout':
    case 'channel_error':
    case 'tool_error':
      return -32000;
    default:
      return -32603;
  }
}

/** The data shape every tool returns on refusal (CONTRACT §5): tools answer data, never throw. */
export interface ToolError {
  status: 'error';
  error: { code: ErrorCode; message: string };
}

export function toolError(code: ErrorCode, message: string): ToolError {
  return { status: 'error', error: { code, message } };
}

export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  return typeof e === 'string' ? e : JSON.stringify(e);
}

/** Runs a tool's work and turns a CrosstalkError into the data a tool answers (anything else still throws). */
export async function asToolData<T>(fn: () => Promise<T>): Promise<T | ToolError> {
  try {
    return await fn();
  } catch (e) {
    if (isCrosstalkError(e)) return toolError(e.code, e.message);
    throw e;
  }
}
