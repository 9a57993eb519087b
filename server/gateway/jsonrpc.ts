// JSON-RPC 2.0 adapter for the gateway (CONTRACT §3): envelope checks, zod params, one error mapping.
import { z } from 'zod';
import { CrosstalkError, type ErrorCode, isCrosstalkError, jsonRpcCodeFor } from '../errors';
import type { Logger } from '../logger';
import * as s from './schemas';
import type { Gateway } from './types';
import type { SessionSummary } from '../events/types';
import { sendParams } from './schemas';
import { pairingsResolveParams } from '../trust/pairing';
import { pushSubscribeParams, pushUnsubscribeParams, pushVapidKeyParams } from '../push/schemas';
import { nulPath, UNSTORABLE_TEXT } from '../unstorable';
import { jsonTooDeep, TOO_DEEP_MESSAGE } from '../http/json-depth';

type Id = string | number | null;

interface RpcError {
  code: number;
  message: string;
  data?: { code: ErrorCode; issues?: Array<{ path: string; message: string }> };
}

export type RpcResponse = { jsonrpc: '2.0'; id: Id; result: unknown } | { jsonrpc: '2.0'; id: Id; error: RpcError };

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Method = { params: z.ZodType<any>; call: (gw: Gateway, p: any) => Promise<unknown> };

// JSON-RPC answers exactly the shapes of CONTRACT §3; the browser's tRPC gets the service's richer summaries.
function contractSession(x: SessionSummary) {
  return {
    sessionKey: x.sessionKey,
    agentId: x.agentId,
    kind: x.kind,
    ...(x.label ? { label: x.label } : {}),
    model: x.model,
    lastActivityAt: x.lastActivityAt,
    status: x.status,
    messageCount: x.messageCount,
  };
}

const methods: Record<string, Method> = {
  agent: { params: s.agentParams, call: (gw, p) => gw.agent(p) },
  send: { params: sendParams, call: (gw, p) => gw.send(p) },
  'agent.wait': { params: s.agentWaitParams, call: (gw, p) => gw.agentWait(p) },
  'agent.cancel': { params: s.agentCancelParams, call: (gw, p) => gw.agentCancel(p) },
  'sessions.list': { params: s.sessionsListParams, call: async (gw, p) => {
    const r = await gw.sessionsList(p);
    return { sessions: r.sessions.map(contractSession), next_cursor: r.next_cursor };
  } },
  // The patched session: the list's fields and the settings `sessions.patch` takes.
  'sessions.patch': { params: s.sessionsPatchParams, call: async (gw, p) => {
    const x = await gw.sessionsPatch(p);
    return { ...contractSession(x), ...(x.thinkingLevel ? { thinkingLevel: x.thinkingLevel } : {}), ...(x.spawnDepth !== undefined ? { spawnDepth: x.spawnDepth } : {}), ...(x.queueMode ? { queueMode: x.queueMode } : {}) };
  } },
  'sessions.delete': { params: s.sessionsDeleteParams, call: (gw, p) => gw.sessionsDelete(p) },
  'sessions.search': { params: s.sessionsSearchParams, call: (gw, p) => gw.sessionsSearch(p) },
  'chat.history': { params: s.chatHistoryParams, call: (gw, p) => gw.chatHistory(p) },
  'approvals.list': { params: s.approvalsListParams, call: async (gw, p) => ({
    approvals: (await gw.approvalsList(p)).approvals.map(({ approvalId, kind, sessionKey, runId, tool, args, requestedAt, chain, server, message, mode, requestedSchema, url }) => ({
      approvalId, kind, sessionKey, runId, tool, args, requestedAt, parentChain: chain ?? [sessionKey],
      ...(kind === 'elicitation' || kind === 'authorization' ? { server, message, mode, ...(requestedSchema ? { requestedSchema } : {}), ...(url ? { url } : {}) } : {}),
    })),
  }) },
  // Beyond CONTRACT §3 (an operator's view, as the room's inbox and the CLI show it): with each one's parent chain and trust.
  'approvals.inbox': { params: s.approvalsListParams, call: (gw, p) => gw.approvalsList(p) },
  'approvals.resolve': { params: s.approvalsResolveParams, call: (gw, p) => gw.approvalsResolve(p, { type: 'user', id: 'jsonrpc' }) },
  'approvals.history': { params: s.approvalsHistoryParams, call: (gw, p) => gw.approvalsHistory(p) },
  'agents.list': { params: s.agentsListParams, call: async (gw) => ({
    agents: (await gw.agentsList()).agents.map(({ agentId, name, model, tools, mcpTools, remote }) => ({ agentId, name, model, tools, ...(mcpTools?.length ? { mcpTools } : {}), ...(remote ? { remote } : {}) })),
  }) },
  'runs.board': { params: s.runsBoardParams, call: (gw, p) => gw.runsBoard(p) },
  'deliveries.get': { params: s.deliveriesGetParams, call: (gw, p) => gw.deliveriesGet(p) },
  'deliveries.list': { params: s.deliveriesListParams, call: (gw, p) => gw.deliveriesList(p) },
  'deliveries.retry': { params: s.deliveriesRetryParams, call: (gw, p) => gw.deliveriesRetry(p) },
  'delegates.list': { params: s.delegatesListParams, call: (gw, p) => gw.delegatesList(p) },
  'delegates.messages': { params: s.delegatesMessagesParams, call: (gw, p) => gw.delegatesMessages(p) },
  'delegates.dismiss': { params: s.delegatesDismissParams, call: (gw, p) => gw.delegatesDismiss(p) },
  'delegates.resume': { params: s.delegatesResumeParams, call: (gw, p) => gw.delegatesResume(p) },
  'delegates.stats': { params: s.delegatesStatsParams, call: (gw) => gw.delegatesStats() },
  status: { params: s.agentsListParams, call: (gw) => gw.status() },
  'pairings.list': { params: s.agentsListParams, call: (gw) => gw.pairingsList() },
  'pairings.resolve': { params: pairingsResolveParams, call: (gw, p) => gw.pairingsResolve(p) },
  'webhooks.list': { params: s.webhooksListParams, call: (gw, p) => gw.webhooksList(p) },
  'sessions.compact': { params: s.sessionsCompactParams, call: (gw, p) => gw.sessionsCompact(p) },
  'sessions.usage': { params: s.sessionsUsageParams, call: (gw, p) => gw.sessionsUsage(p) },
  'push.vapidKey': { params: pushVapidKeyParams, call: (gw) => gw.pushVapidKey() },
  'push.subscribe': { params: pushSubscribeParams, call: (gw, p) => gw.pushSubscribe(p) },
  'push.unsubscribe': { params: pushUnsubscribeParams, call: (gw, p) => gw.pushUnsubscribe(p) },
};

export function rpcError(id: Id, code: number, message: string, data?: RpcError['data']): RpcResponse {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data ? { data } : {}) } };
}

/** The transport refusals both HTTP adapters answer (HTTP 401 and 413). */
export const UNAUTHORIZED_MESSAGE = 'unauthorized: send Authorization: Bearer <token>';
export const unauthorizedResponse = () => rpcError(null, -32001, UNAUTHORIZED_MESSAGE, { code: 'unauthorized' });
export const tooLargeResponse = () => rpcError(null, -32600, 'request body larger than 1 MiB', { code: 'payload_too_large' });

export function errorResponse(id: Id, e: unknown, log?: Logger): RpcResponse {
  if (isCrosstalkError(e)) {
    return rpcError(id, jsonRpcCodeFor(e.code), e.message, { code: e.code, ...(e.issues ? { issues: e.issues } : {}) });
  }
  log?.error({ err: e }, 'gateway method failed');
  return rpcError(id, -32603, 'internal error', { code: 'internal' });
}

/** One §3 method by name, validated and shaped exactly as JSON-RPC answers it (the MCP server's tools reuse it). */
export async function callMethod(gw: Gateway, name: string, params: unknown): Promise<unknown> {
  const method = Object.hasOwn(methods, name) ? methods[name] : undefined;
  if (!method) throw new CrosstalkError('invalid_request', `unknown method: ${name}`);
  const parsed = method.params.safeParse(params ?? {});
  if (!parsed.success) {
    const issues = zodIssues(parsed.error);
    throw new CrosstalkError(paramsCode(issues), 'invalid params', issues);
  }
  return method.call(gw, parsed.data);
}

const UNKNOWN_KEY = 'unknown key';

/** Each issue with the field it is about; an unknown key names that key (zod's strict objects put it on the parent). */
export function zodIssues(err: z.ZodError) {
  return err.issues.flatMap((i) =>
    i.code === 'unrecognized_keys' ? i.keys.map((k) => ({ path: [...i.path, k].join('.'), message: `${UNKNOWN_KEY} "${k}"` })) : [{ path: i.path.join('.'), message: i.message }],
  );
}

/**
 * The §6 code of params that fail their schema: a cursor alone that cannot be one is `invalid_cursor` (CONTRACT §3).
 * A `cursor` given to a method that takes none (runs.board) is an unknown key, `invalid_request`.
 */
export function paramsCode(issues: Array<{ path: string; message?: string }>): 'invalid_cursor' | 'invalid_request' {
  return issues.length > 0 && issues.every((i) => i.path === 'cursor' && !i.message?.startsWith(UNKNOWN_KEY)) ? 'invalid_cursor' : 'invalid_request';
}

const envelope = z.object({
  jsonrpc: z.literal('2.0'),
  method: z.string().min(1),
  params: z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]).optional(),
  id: z.union([z.string(), z.number(), z.null()]).optional(),
});

function idOf(msg: unknown): Id {
  const rawId = (msg as { id?: unknown } | null)?.id;
  return typeof rawId === 'string' || typeof rawId === 'number' ? rawId : null;
}

/** The envelope of a well-formed request, checked by hand (what `envelope` accepts); null: let zod word the refusal. */
function plainEnvelope(msg: unknown): { method: string; params?: unknown } | null {
  if (!msg || typeof msg !== 'object' || Array.isArray(msg)) return null;
  const m = msg as Record<string, unknown>;
  if (m.jsonrpc !== '2.0' || typeof m.method !== 'string' || !m.method) return null;
  if (m.params !== undefined && (m.params === null || typeof m.params !== 'object')) return null;
  if (m.id !== undefined && m.id !== null && typeof m.id !== 'string' && typeof m.id !== 'number') return null;
  return { method: m.method, params: m.params };
}

async function handleOne(gw: Gateway, msg: unknown, log?: Logger): Promise<RpcResponse | null> {
  const id = idOf(msg);
  let env = plainEnvelope(msg);
  if (!env) {
    const parsed = envelope.safeParse(msg);
    if (!parsed.success) return rpcError(id, -32600, 'invalid request', { code: 'invalid_request', issues: zodIssues(parsed.error) });
    env = parsed.data;
  }
  const notification = !('id' in (msg as object));
  const method = Object.hasOwn(methods, env.method) ? methods[env.method] : undefined;
  if (!method) return notification ? null : rpcError(id, -32601, `unknown method ${env.method}`, { code: 'invalid_request' });
  // A notification is never answered (JSON-RPC 2.0 §4.1), not even when its params are refused: it is not run either.
  if (Array.isArray(env.params)) return notification ? null : rpcError(id, -32602, 'params must be an object', { code: 'invalid_request', issues: [{ path: '', message: 'params must be an object' }] });
  const nul = nulPath(env.params);
  if (nul !== null) {
    const issues = [{ path: nul, message: UNSTORABLE_TEXT }];
    return notification ? null : rpcError(id, -32602, 'invalid params', { code: paramsCode(issues), issues }); // a cursor with NUL does not decode: invalid_cursor
  }
  const params = method.params.safeParse(env.params ?? {});
  if (!params.success) {
    const issues = zodIssues(params.error);
    return notification ? null : rpcError(id, -32602, 'invalid params', { code: paramsCode(issues), issues });
  }
  try {
    const result = await method.call(gw, params.data);
    return notification ? null : { jsonrpc: '2.0', id, result };
  } catch (e) {
    return notification ? null : errorResponse(id, e, log);
  }
}

/** Handles a request body; null means nothing to send back (notifications only). */
export async function handleJsonRpc(gw: Gateway, body: string, log?: Logger): Promise<RpcResponse | RpcResponse[] | null> {
  let msg: unknown;
  try {
    msg = JSON.parse(body);
  } catch {
    return rpcError(null, -32700, 'parse error', { code: 'invalid_request' });
  }
  // Before anything recursive (the NUL check, zod) walks it: params past 64 levels are an invalid request.
  if (jsonTooDeep(body, Array.isArray(msg) ? 2 : 1)) return rpcError(idOf(msg), -32600, TOO_DEEP_MESSAGE, { code: 'invalid_request' });
  if (Array.isArray(msg)) {
    if (!msg.length) return rpcError(null, -32600, 'empty batch', { code: 'invalid_request' });
    if (msg.length > 100) return rpcError(null, -32600, 'batch larger than 100', { code: 'invalid_request' });
    const out = (await Promise.all(msg.map((m) => handleOne(gw, m, log)))).filter((r): r is RpcResponse => r !== null);
    return out.length ? out : null;
  }
  return handleOne(gw, msg, log);
}

export { CrosstalkError };
