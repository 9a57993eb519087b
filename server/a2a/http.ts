// A2A over HTTP, fetch-style (Request → Response): the agent card (no token) and JSON-RPC v1.0 + v0.3 (bearer token); Next and node:http share it.
import { A2A_VERSION_HEADER, AgentCard, Extensions, formatSSEErrorEvent, formatSSEEvent, HTTP_EXTENSION_HEADER, SSE_HEADERS } from '@a2a-js/sdk';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { defaultServerCallContextBuilder, JsonRpcTransportHandler, validateVersion } from '@a2a-js/sdk/server';
import { isAuthorized } from '../auth';
import type { FullRuntime } from '../runtime-types';
import type { AgentConfig } from '../config';
import { tooLargeResponse, UNAUTHORIZED_MESSAGE } from '../gateway/jsonrpc';
import { MAX_BODY_BYTES, readCapped } from '../http/handlers';
import { jsonTooDeep, TOO_DEEP_MESSAGE } from '../http/json-depth';
import { CrosstalkA2AHandler } from './handler';
import { a2aParamIssues } from './params';
import { A2APush } from './push';
import { agentCardFor, legacyCardJson } from './card';
import { SIGNAL_KEY } from './tasks';

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers } });

interface A2AState {
  push: A2APush;
}
const states = new WeakMap<FullRuntime, A2AState>();

function stateOf(rt: FullRuntime): A2AState {
  let st = states.get(rt);
  if (!st) states.set(rt, (st = { push: new A2APush(rt, (runId) => followAny(rt, runId)) }));
  return st;
}

/** Boot hook: re-arms the push notification configs of tasks that were still running. */
export async function startA2A(rt: FullRuntime): Promise<void> {
  await stateOf(rt).push.rearm();
}

/** Follows a run of any agent's A2A session (push forwarding does not know which agent asked). */
async function* followAny(rt: FullRuntime, runId: string) {
  const row = await rt.store.getRun(runId);
  const agentId = row?.session_key.split(':')[1];
  const agent = agentId ? rt.orchestrator.agent(agentId) : undefined;
  if (!agent) return;
  yield* new CrosstalkA2AHandler(rt, agent, () => agentCardFor(agent, ''), stateOf(rt).push).follow(runId, { replay: true });
}

/** The public base URL the card advertises: CROSSTALK_PUBLIC_URL, else the request's own origin. */
function baseUrl(req: Request): string {
  const configured = process.env.CROSSTALK_PUBLIC_URL?.trim();
  if (configured) return configured.replace(/\/+$/, '');
  const u = new URL(req.url);
  const host = req.headers.get('host');
  return host ? `${u.protocol}//${host}` : u.origin;
}

const isLegacy = (v: string | null) => !v || v.trim() === '' || /^0\.3(\.|$)/.test(v.trim());

/** GET /a2a/<agentId>/.well-known/agent-card.json — no token: the card advertises bearer auth (v1.0 form with `A2A-Version: 1.0`, else v0.3 with the v1.0 interfaces embedded). */
export function handleAgentCard(rt: FullRuntime, agentId: string, req: Request): Response {
  const agent = rt.orchestrator.agent(agentId);
  // The same plain body as the agent's calls answer (a client reads one shape for every A2A route).
  if (!agent) return json({ error: { code: 'unknown_agent', message: `unknown agent ${agentId}` } }, 404);
  const card = agentCardFor(agent, baseUrl(req));
  const v1 = AgentCard.toJSON(card) as Record<string, unknown>;
  const body = isLegacy(req.headers.get(A2A_VERSION_HEADER)) ? legacyCardJson(card, v1) : v1;
  return json(body, 200, { 'cache-control': 'no-cache', vary: A2A_VERSION_HEADER });
}

/** POST /a2a/<agentId> — A2A JSON-RPC (v1.0 names with `A2A-Version: 1.0`, v0.3 names otherwise), bearer token required. */
export async function handleA2ARpc(rt: FullRuntime, agentId: string, req: Request): Promise<Response> {
  // HTTP's own answers, not JSON-RPC errors: in A2A, -32001 is TaskNotFound, so the SDK's client read a missing token
  // (the gateway's -32001 `unauthorized`) or an unknown agent as "task not found". A plain body makes it report the status.
  if (!isAuthorized(req.headers, rt.token)) return json({ error: { code: 'unauthorized', message: UNAUTHORIZED_MESSAGE } }, 401, { 'www-authenticate': 'Bearer' });
  const agent: AgentConfig | undefined = rt.orchestrator.agent(agentId);
  if (!agent) return json({ error: { code: 'unknown_agent', message: `unknown agent ${agentId}` } }, 404);
  const raw = await readCapped(req, MAX_BODY_BYTES);
  if (raw === null) return json(tooLargeResponse(), 413);
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    return json({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } });
  }
  // A notification (no `id`) is done and gets no answer (JSON-RPC 2.0 §4.1): 204, as `/api/gateway` answers one.
  const isCall = !!body && typeof body === 'object' && !Array.isArray(body);
  const notification = isCall && !('id' in body);
  const reply = (payload: unknown) => (notification ? new Response(null, { status: 204 }) : json(payload));
  // Without `params` an unknown method was -32602 (the v0.3 handler checks params first): -32601, as with them.
  if (isCall && body.params === undefined && typeof body.method === 'string') body = { ...body, params: {} };
  // Before the SDK's handlers (and their recursive conversions) see it: params past 64 levels are an invalid request.
  if (jsonTooDeep(raw, 1)) {
    const rawId = body?.id;
    const id = typeof rawId === 'string' || typeof rawId === 'number' ? rawId : null;
    return reply({ jsonrpc: '2.0', id, error: { code: -32600, message: TOO_DEEP_MESSAGE, data: { code: 'invalid_request' } } });
  }
  const versionHeader = req.headers.get(A2A_VERSION_HEADER);
  const legacy = isLegacy(versionHeader);
  // Params first, before any lookup: a malformed call is -32602 naming its fields, never an internal error.
  const issues = body && typeof body === 'object' && !Array.isArray(body) ? a2aParamIssues(body.method, body.params, legacy) : null;
  if (issues) {
    const rid = typeof body.id === 'string' || typeof body.id === 'number' ? body.id : null;
    return reply({ jsonrpc: '2.0', id: rid, error: { code: -32602, message: `invalid params: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, data: { code: 'invalid_request', issues } } });
  }
  const card = agentCardFor(agent, baseUrl(req));
  const handler = new CrosstalkA2AHandler(rt, agent, () => card, stateOf(rt).push);
  const mapError = legacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError : JsonRpcTransportHandler.mapToJSONRPCError;
  const id = (body?.id as string | number | undefined) ?? null;
  const ac = new AbortController();
  req.signal?.addEventListener('abort', () => ac.abort(), { once: true });
  let out: unknown;
  try {
    const context = defaultServerCallContextBuilder({
      extensions: Extensions.parseServiceParameter(req.headers.get(HTTP_EXTENSION_HEADER) ?? undefined),
      user: undefined,
      headers: Object.fromEntries(req.headers),
      requestedVersion: versionHeader || undefined,
    });
    context.state.set(SIGNAL_KEY, ac.signal);
    validateVersion(context.requestedVersion, card, 'JSONRPC');
    out = await (legacy ? new LegacyJsonRpcTransportHandler(handler) : new JsonRpcTransportHandler(handler)).handle(body, context);
  } catch (e) {
    return reply({ jsonrpc: '2.0', id, error: mapError(e) });
  }
  if (!out || typeof (out as AsyncGenerator)[Symbol.asyncIterator] !== 'function') return reply(out);
  const it = (out as AsyncGenerator<unknown>)[Symbol.asyncIterator]();
  // A stream asked for as a notification has no one to stream to: it is not started.
  if (notification) {
    void it.return?.(undefined);
    return reply(null);
  }
  // The first event decides between an error answer and a stream, as the SDK's own server does.
  let first: IteratorResult<unknown>;
  try {
    first = await it.next();
  } catch (e) {
    return json({ jsonrpc: '2.0', id, error: mapError(e) });
  }
  const enc = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      if (first.done) controller.close();
      else controller.enqueue(enc.encode(formatSSEEvent(first.value)));
    },
    async pull(controller) {
      if (first.done) return;
      try {
        const next = await it.next();
        if (next.done) return controller.close();
        controller.enqueue(enc.encode(formatSSEEvent(next.value)));
      } catch (e) {
        controller.enqueue(enc.encode(formatSSEErrorEvent({ jsonrpc: '2.0', id, error: mapError(e) })));
        controller.close();
      }
    },
    cancel() {
      ac.abort();
      void it.return?.(undefined);
    },
  });
  return new Response(stream, { headers: { ...SSE_HEADERS } });
}

/** Routes a request under /a2a/ (the node:http server; Next has its own route files calling the two handlers). */
export async function routeA2A(rt: FullRuntime, req: Request): Promise<Response | null> {
  const p = new URL(req.url).pathname;
  const m = /^\/a2a\/([a-z0-9._+-]+)(\/\.well-known\/agent-card\.json)?\/?$/.exec(p);
  if (!m) return null;
  if (m[2]) return req.method === 'GET' ? handleAgentCard(rt, m[1]!, req) : new Response('method not allowed', { status: 405 });
  return req.method === 'POST' ? handleA2ARpc(rt, m[1]!, req) : new Response('method not allowed', { status: 405 });
}
