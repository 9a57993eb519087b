// Delivery plumbing shared by the channel adapters: failure kinds, the retry policy, a JSON-over-HTTP helper, channel config.
import { z } from 'zod';
import { CrosstalkError, errorMessage } from '../errors';

/** Settings every channel accepts next to its credentials (`config.channels.<id>`). */
export const baseChannelConfig = {
  /** The platform's API root; tests point it at a loopback fake. */
  apiBaseUrl: z.string().url().optional(),
  /** The agent inbound messages of this channel go to (default: the default agent). */
  agentId: z.string().optional(),
  /** Attempts per delivery, counting the first (429s, and 5xx where a retry cannot duplicate). */
  maxAttempts: z.number().int().min(1).max(10).default(3),
  /** A 429 asking to wait longer than this fails at once instead of holding the caller. */
  maxRetryAfterMs: z.number().int().min(0).default(30_000),
  /** Backoff base for retried 5xx/network failures, doubling per attempt. */
  retryBaseMs: z.number().int().min(0).default(500),
  timeoutMs: z.number().int().min(100).default(15_000),
  accounts: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
};

export interface RetrySettings {
  maxAttempts: number;
  maxRetryAfterMs: number;
  retryBaseMs: number;
}

export type FailureKind = 'auth' | 'rate_limited' | 'server' | 'client' | 'network' | 'unsupported' | 'config';

/** A failed delivery attempt, classified so the retry policy can decide. */
export class DeliveryFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    message: string,
    readonly o: { status?: number; retryAfterMs?: number; safeToRetry?: boolean } = {},
  ) {
    super(message);
    this.name = 'DeliveryFailure';
  }
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(new DeliveryFailure('network', 'delivery aborted'));
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(new DeliveryFailure('network', 'delivery aborted'));
      },
      { once: true },
    );
  });

/** How a delivery with a record goes through the retry policy (server/channels/channel-deliveries.ts). */
export interface RetryHooks {
  /** The attempt number to begin at: a round taken over from a process that died goes on where it was. */
  first?: number;
  /** Before waiting `ms` to retry after failure `f` (the record says so first); a rejection stops the retries. */
  beforeWait?: (f: DeliveryFailure, ms: number) => Promise<void>;
}

/**
 * Runs one delivery with the retry policy: a 429 is always safe to retry (the platform refused the request)
 * and waits its retry-after; a 5xx or network failure is retried only when the adapter marked the request
 * idempotent (a transaction id, an idempotency key), since otherwise the message may already be posted.
 * Anything else, or running out of attempts, is a `channel_error` naming the platform and the cause.
 */
export async function withDeliveryRetry<T>(label: string, s: RetrySettings, fn: (attempt: number) => Promise<T>, signal?: AbortSignal, hooks: RetryHooks = {}): Promise<T> {
  for (let attempt = hooks.first ?? 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (e) {
      if (e instanceof CrosstalkError) throw e; // configuration and target errors: nothing to retry
      const f = e instanceof DeliveryFailure ? e : new DeliveryFailure('network', errorMessage(e));
      const left = attempt < s.maxAttempts;
      let wait: number | null = null;
      if (f.kind === 'rate_limited') {
        const ms = f.o.retryAfterMs ?? 1000;
        if (left && ms <= s.maxRetryAfterMs) wait = ms;
      } else if ((f.kind === 'server' || f.kind === 'network') && f.o.safeToRetry && left) {
        wait = s.retryBaseMs * 2 ** (attempt - 1);
      }
      if (wait === null || signal?.aborted) throw toChannelError(label, f, attempt);
      await hooks.beforeWait?.(f, wait);
      await sleep(wait, signal);
    }
  }
}

export function toChannelError(label: string, f: DeliveryFailure, attempts: number): CrosstalkError {
  const status = f.o.status ? ` (HTTP ${f.o.status})` : '';
  const tries = attempts > 1 ? `; gave up after ${attempts} attempts` : '';
  let what: string;
  switch (f.kind) {
    case 'auth':
      what = `authentication failed${status}: ${f.message}`;
      break;
    case 'rate_limited':
      what = `rate limited${status}${f.o.retryAfterMs !== undefined ? `, retry after ${Math.ceil(f.o.retryAfterMs / 1000)}s` : ''}: ${f.message}`;
      break;
    case 'server':
      what = `server error${status}: ${f.message}`;
      break;
    case 'client':
      what = `request refused${status}: ${f.message}`;
      break;
    default:
      what = f.message;
  }
  return new CrosstalkError('channel_error', `${label} delivery failed: ${what}${tries}`);
}

/** Seconds or an HTTP date, as `Retry-After` carries them, in ms. */
export function parseRetryAfter(v: string | null | undefined): number | undefined {
  if (!v) return undefined;
  const n = Number(v);
  if (Number.isFinite(n)) return Math.max(0, n * 1000);
  const d = Date.parse(v);
  return Number.isFinite(d) ? Math.max(0, d - Date.now()) : undefined;
}

export interface HttpJsonRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string or URLSearchParams as is. */
  body?: unknown;
  timeoutMs: number;
  signal?: AbortSignal;
  /** The request cannot post twice (a transaction id or idempotency key): 5xx and network failures retry. */
  safeToRetry?: boolean;
  /** Platform-specific description of an error body. */
  describe?: (body: unknown, status: number) => string | undefined;
  /** Platform-specific retry-after from other headers (ms), when Retry-After is missing. */
  retryAfterFromHeaders?: (headers: Headers) => number | undefined;
  /** Platform-specific retry-after from an error body (ms), when the header is missing. */
  retryAfterFromBody?: (body: unknown) => number | undefined;
}

export interface HttpJsonResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

/** One HTTP call; non-2xx answers become classified DeliveryFailures. */
export async function httpJson(r: HttpJsonRequest): Promise<HttpJsonResponse> {
  const headers: Record<string, string> = { accept: 'application/json', ...r.headers };
  let body: BodyInit | undefined;
  if (r.body instanceof URLSearchParams || typeof r.body === 'string') body = r.body as BodyInit;
  else if (r.body !== undefined) {
    body = JSON.stringify(r.body);
    headers['content-type'] ??= 'application/json';
  }
  const signals = [AbortSignal.timeout(r.timeoutMs), ...(r.signal ? [r.signal] : [])];
  let res: Response;
  try {
    res = await fetch(r.url, { method: r.method ?? 'POST', headers, body, signal: AbortSignal.any(signals), redirect: 'error' });
  } catch (e) {
    const cause = (e as { cause?: { code?: string } }).cause?.code;
    // A refused connection never reached the platform: safe to retry whatever the request.
    throw new DeliveryFailure('network', `cannot reach ${new URL(r.url).origin}: ${cause ?? errorMessage(e)}`, { safeToRetry: r.safeToRetry || cause === 'ECONNREFUSED' });
  }
  const text = await res.text().catch(() => '');
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON: keep the text */
  }
  if (res.ok) return { status: res.status, headers: res.headers, body: parsed };
  const detail = r.describe?.(parsed, res.status) ?? (typeof parsed === 'string' && parsed ? parsed.slice(0, 200) : res.statusText || 'error');
  throw failureForStatus(res.status, detail, {
    retryAfterMs: parseRetryAfter(res.headers.get('retry-after')) ?? r.retryAfterFromHeaders?.(res.headers) ?? r.retryAfterFromBody?.(parsed),
    safeToRetry: r.safeToRetry,
  });
}

export function failureForStatus(status: number, detail: string, o: { retryAfterMs?: number; safeToRetry?: boolean } = {}): DeliveryFailure {
  if (status === 401 || status === 403) return new DeliveryFailure('auth', detail, { status });
  if (status === 429) return new DeliveryFailure('rate_limited', detail, { status, retryAfterMs: o.retryAfterMs });
  if (status >= 500) return new DeliveryFailure('server', detail, { status, safeToRetry: o.safeToRetry });
  return new DeliveryFailure('client', detail, { status });
}

/** `config.channels.<id>` merged with `accounts.<accountId>`, validated by the plugin's schema. */
export function resolveChannelConfig<C>(channels: Record<string, Record<string, unknown>>, id: string, schema: z.ZodType<C> | undefined, accountId?: string): C {
  const base = channels[id];
  if (!base) throw new CrosstalkError('channel_error', `channel ${id} is not configured (config.channels.${id})`);
  const accounts = (base.accounts ?? {}) as Record<string, Record<string, unknown>>;
  if (accountId && accountId !== 'default' && !accounts[accountId]) {
    throw new CrosstalkError('channel_error', `channel ${id} has no account ${accountId} (config.channels.${id}.accounts.${accountId})`);
  }
  const merged = accountId && accounts[accountId] ? { ...base, ...accounts[accountId] } : base;
  if (!schema) return merged as C;
  const parsed = schema.safeParse(merged);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CrosstalkError('channel_error', `config.channels.${id}.${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  return parsed.data;
}

// Channels check signatures with the same helpers as the API token.
export { hmacHex, safeEqual } from '../auth';

/** Joins an API root and a path, keeping the root's own path (`http://x/api` + `/v4/posts`). */
export function apiUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + (path.startsWith('/') ? path : `/${path}`);
}
