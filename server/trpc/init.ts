// tRPC bootstrap: request context (runtime + auth), the one CrosstalkError → TRPCError mapping, and the procedure builders.
import { initTRPC, TRPCError } from '@trpc/server';
import type { TRPC_ERROR_CODE_KEY } from '@trpc/server';
import { isAuthorized } from '../auth';
import { CrosstalkError, type ErrorCode, isCrosstalkError, type ValidationIssue } from '../errors';
import type { Runtime } from '../runtime-types';
import { nulPath, UNSTORABLE_TEXT } from '../unstorable';
import { paramsCode } from '../gateway/jsonrpc';

export interface TRPCContext {
  runtime: Runtime;
  authorized: boolean;
}

/** Built per request by the fetch adapter: who is calling, and the runtime to serve them (the edge hands it in). */
export function createTRPCContext(opts: { headers: Headers; method?: string; navigation?: boolean; runtime: Runtime }): TRPCContext {
  const { runtime } = opts;
  return { runtime, authorized: isAuthorized(opts.headers, runtime.token, { method: opts.method, navigation: opts.navigation }) };
}

const TRPC_CODE_FOR: Record<ErrorCode, TRPC_ERROR_CODE_KEY> = {
  invalid_request: 'BAD_REQUEST',
  invalid_cursor: 'BAD_REQUEST',
  unknown_agent: 'NOT_FOUND',
  unknown_session: 'NOT_FOUND',
  unknown_conversation: 'NOT_FOUND',
  unknown_run: 'NOT_FOUND',
  unknown_approval: 'NOT_FOUND',
  unknown_channel: 'NOT_FOUND',
  agent_busy: 'CONFLICT',
  already_resolved: 'CONFLICT',
  not_cancelable: 'CONFLICT',
  limit_exceeded: 'CONFLICT',
  rate_limited: 'TOO_MANY_REQUESTS',
  payload_too_large: 'PAYLOAD_TOO_LARGE',
  unauthorized: 'UNAUTHORIZED',
  forbidden: 'FORBIDDEN',
  channel_error: 'BAD_GATEWAY',
  timeout: 'TIMEOUT',
  interrupted: 'INTERNAL_SERVER_ERROR',
  tool_unavailable: 'BAD_GATEWAY',
  unknown_delivery: 'NOT_FOUND',
  not_retryable: 'CONFLICT',
  budget_exceeded: 'CONFLICT',
  tool_error: 'BAD_GATEWAY',
  internal: 'INTERNAL_SERVER_ERROR',
};

/** Domain code for a tRPC error that did not come from a CrosstalkError (validation, auth, crashes). */
const DOMAIN_CODE_FOR: Partial<Record<TRPC_ERROR_CODE_KEY, ErrorCode>> = {
  BAD_REQUEST: 'invalid_request',
  PARSE_ERROR: 'invalid_request',
  UNAUTHORIZED: 'unauthorized',
  FORBIDDEN: 'forbidden',
  NOT_FOUND: 'invalid_request',
  PAYLOAD_TOO_LARGE: 'payload_too_large',
  TIMEOUT: 'timeout',
  TOO_MANY_REQUESTS: 'rate_limited',
  // tRPC's own refusals of a malformed call (a query POSTed, a body that is not JSON, …): the caller's error, not ours.
  METHOD_NOT_SUPPORTED: 'invalid_request',
  UNSUPPORTED_MEDIA_TYPE: 'invalid_request',
  NOT_IMPLEMENTED: 'invalid_request',
  UNPROCESSABLE_CONTENT: 'invalid_request',
  PRECONDITION_FAILED: 'invalid_request',
  CLIENT_CLOSED_REQUEST: 'invalid_request',
};

/** The one mapping from anything thrown by the service layer to a TRPCError (cause kept for the formatter). */
export function toTRPCError(e: unknown): TRPCError {
  if (e instanceof TRPCError) return e;
  if (isCrosstalkError(e)) return new TRPCError({ code: TRPC_CODE_FOR[e.code], message: e.message, cause: e });
  return new TRPCError({ code: 'INTERNAL_SERVER_ERROR', message: 'internal error', cause: e });
}

function issuesOf(cause: unknown): ValidationIssue[] | undefined {
  if (isCrosstalkError(cause)) return cause.issues;
  const raw = (cause as { issues?: unknown } | undefined)?.issues;
  if (!Array.isArray(raw)) return undefined;
  // As JSON-RPC's (gateway/jsonrpc.ts zodIssues): an unknown key is named in its path, not left at the object's.
  return raw.flatMap((i: { path?: ReadonlyArray<PropertyKey | { key: PropertyKey }>; message?: string; code?: string; keys?: string[] }) => {
    const path = (i.path ?? []).map((p) => String(typeof p === 'object' && p !== null ? p.key : p));
    if (i.code === 'unrecognized_keys' && Array.isArray(i.keys)) return i.keys.map((k) => ({ path: [...path, k].join('.'), message: `unknown key "${k}"` }));
    return [{ path: path.join('.'), message: String(i.message ?? 'invalid') }];
  });
}

const t = initTRPC.context<TRPCContext>().create({
  // Every error exposes a CONTRACT §6 code as `data.code` (and validation issues as `data.issues`).
  errorFormatter({ shape, error }) {
    const cause = error.cause;
    const issues = issuesOf(cause);
    // Input that fails its schema: invalid_cursor when the cursor alone is wrong, as over JSON-RPC (paramsCode).
    const code: ErrorCode = isCrosstalkError(cause) ? cause.code : error.code === 'BAD_REQUEST' && issues?.length ? paramsCode(issues) : (DOMAIN_CODE_FOR[error.code] ?? 'internal');
    return {
      ...shape,
      message: code === 'internal' && !isCrosstalkError(cause) ? 'internal error' : shape.message,
      data: { ...shape.data, code, ...(issues ? { issues } : {}), stack: undefined },
    };
  },
  sse: {
    // Pings keep idle streams open through proxies; the client reconnects (with lastEventId) when they stop.
    ping: { enabled: true, intervalMs: 10_000 },
    client: { reconnectAfterInactivityMs: 25_000 },
  },
});

export const createTRPCRouter = t.router;
export const createCallerFactory = t.createCallerFactory;

/** Maps domain errors thrown by a resolver (queries and mutations; subscriptions map inside their generator). */
const domainErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok && isCrosstalkError(result.error.cause)) throw toTRPCError(result.error.cause);
  return result;
});

export const publicProcedure = t.procedure.use(domainErrors);

/** Requires the API token (Bearer header or the login cookie): the API is never open. */
export const protectedProcedure = publicProcedure.use(async ({ ctx, next, getRawInput }) => {
  if (!ctx.authorized) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'missing or wrong token' });
  // As JSON-RPC: a string holding U+0000 or a lone surrogate is refused here, on both stores alike.
  const nul = nulPath(await getRawInput());
  if (nul !== null) {
    const issues = [{ path: nul, message: UNSTORABLE_TEXT }];
    throw new TRPCError({ code: 'BAD_REQUEST', message: `${nul || 'input'}: ${UNSTORABLE_TEXT}`, cause: new CrosstalkError(paramsCode(issues), 'invalid params', issues) });
  }
  return next({ ctx: { gateway: ctx.runtime.gateway } });
});
