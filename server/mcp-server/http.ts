// POST/GET/DELETE /mcp: crosstalk as an MCP server over streamable HTTP (CONTRACT §10), stateless, so any process answers.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, ErrorCode, InitializeRequestSchema, ListToolsRequestSchema, PingRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { isAuthorized, isSameOrigin } from '../auth';
import type { FullRuntime } from '../runtime-types';
import { MAX_BODY_BYTES, readCapped } from '../http/handlers';
import { jsonTooDeep, TOO_DEEP_MESSAGE } from '../http/json-depth';
import { callMcpTool, MCP_TOOLS, type McpToolDef } from './tools';

const byName = new Map<string, McpToolDef>(MCP_TOOLS.map((t) => [t.name, t]));
const listed = MCP_TOOLS.map((t) => ({
  name: t.name,
  title: t.title,
  description: t.description,
  inputSchema: z.toJSONSchema(t.input, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' }) as { type: 'object'; [k: string]: unknown },
  annotations: { title: t.title, readOnlyHint: t.readOnly, openWorldHint: false },
}));

const VERSION = process.env.npm_package_version ?? '0.1.0';

/**
 * The calls in flight on this process, by request id: /mcp is stateless (a Server per POST), so a client's
 * `notifications/cancelled` comes in a POST of its own, to a Server that never saw the call, and the SDK's own
 * cancellation cannot reach it. A cancel here aborts the call's signal (a sync `crosstalk_send` stops waiting), as does
 * the client closing the call's POST. Request ids are the client's: two clients (one token, one operator) using the
 * same id at once cancel each other's call.
 */
type InFlight = Map<string, Set<AbortController>>;
const inFlightOf = new WeakMap<FullRuntime, InFlight>();
const callsOf = (rt: FullRuntime): InFlight => {
  let m = inFlightOf.get(rt);
  if (!m) inFlightOf.set(rt, (m = new Map()));
  return m;
};
const idKey = (id: unknown) => JSON.stringify(id);

/** Calls cancelled by the client's `notifications/cancelled` (not by the POST's end): their answer is not sent. */
const cancelledByClient = new WeakSet<AbortController>();

/** Registers the calls a POST carries; each one's signal aborts on a cancel of its id or on the POST's end. */
function trackCalls(
  inFlight: InFlight,
  messages: unknown[],
  closed: AbortSignal,
): { signalOf(id: unknown): AbortSignal | undefined; cancelled(id: unknown): boolean; readonly any: boolean; done(): void } {
  const mine = new Map<string, AbortController>();
  for (const m of messages) {
    const { id, method } = (m && typeof m === 'object' ? m : {}) as { id?: unknown; method?: unknown };
    if (method !== 'tools/call' || (typeof id !== 'string' && typeof id !== 'number')) continue;
    const ac = new AbortController();
    mine.set(idKey(id), ac);
    let set = inFlight.get(idKey(id));
    if (!set) inFlight.set(idKey(id), (set = new Set()));
    set.add(ac);
  }
  const onClose = () => {
    for (const ac of mine.values()) ac.abort(new Error('the client closed the request'));
  };
  if (mine.size) closed.addEventListener('abort', onClose, { once: true });
  return {
    signalOf: (id) => mine.get(idKey(id))?.signal,
    cancelled: (id) => {
      const ac = mine.get(idKey(id));
      return !!ac && cancelledByClient.has(ac);
    },
    any: mine.size > 0,
    done: () => {
      closed.removeEventListener('abort', onClose);
      for (const [k, ac] of mine) {
        const set = inFlight.get(k);
        set?.delete(ac);
        if (set && !set.size) inFlight.delete(k);
      }
    },
  };
}

/**
 * `notifications/cancelled` of a call in flight here: its signal aborts (MCP: the receiver stops its work). Returns
 * the cancels that found no call here: on several processes the call may be on another one.
 */
function cancelCalls(inFlight: InFlight, messages: unknown[]): Array<{ requestId: string | number; reason?: string }> {
  const missed: Array<{ requestId: string | number; reason?: string }> = [];
  for (const m of messages) {
    const { method, params } = (m && typeof m === 'object' ? m : {}) as { method?: unknown; params?: { requestId?: unknown; reason?: unknown } };
    if (method !== 'notifications/cancelled' || !params || (typeof params.requestId !== 'string' && typeof params.requestId !== 'number')) continue;
    const reason = typeof params.reason === 'string' ? params.reason.slice(0, 500) : undefined;
    const here = inFlight.get(idKey(params.requestId));
    if (!here?.size) missed.push({ requestId: params.requestId, ...(reason !== undefined ? { reason } : {}) });
    for (const ac of here ?? []) {
      if (!ac.signal.aborted) cancelledByClient.add(ac);
      ac.abort(new Error(reason ?? 'cancelled by the client'));
    }
  }
  return missed;
}

/**
 * On several processes (PostgreSQL) a client's cancel can reach another process than its call (a load balancer
 * spreads POSTs): a cancel that found no call here goes to every process on a NOTIFY channel of the cluster, and each
 * cancels the call if it has it. The LISTEN is set up before this process serves its first /mcp request, so a call
 * in flight here never misses one.
 */
const sharedCancels = new WeakMap<object, Promise<unknown>>();
function shareCancels(rt: FullRuntime): Promise<unknown> | undefined {
  const cluster = rt.cluster;
  if (!cluster) return undefined;
  let ready = sharedCancels.get(cluster);
  if (!ready) {
    const onCancel = (payload: string) => {
      try {
        const c = JSON.parse(payload) as { requestId?: unknown; reason?: unknown };
        cancelCalls(callsOf(rt), [{ method: 'notifications/cancelled', params: c }]);
      } catch {
        // not ours to read
      }
    };
    ready = cluster.listen(cancelChannel(cluster.channel), onCancel, () => undefined).catch((e: unknown) => rt.log.warn({ err: (e as Error).message }, 'mcp: could not listen for cancels from other processes'));
    sharedCancels.set(cluster, ready);
  }
  return ready;
}
const cancelChannel = (clusterChannel: string) => `${clusterChannel}_mcp_cancel`;

function mcpServer(rt: FullRuntime, calls?: { signalOf(id: unknown): AbortSignal | undefined }): Server {
  const server = new Server({ name: 'crosstalk', version: VERSION }, { capabilities: { tools: { listChanged: false } } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listed }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const tool = byName.get(req.params.name);
    // An unknown tool is a protocol error (-32602), not a tool result (CONTRACT §10).
    // (A plain error with a code: McpError would put its own "MCP error -32602: " into the wire message, and the client adds one again.)
    if (!tool) throw Object.assign(new Error(`unknown tool: ${req.params.name}`), { code: ErrorCode.InvalidParams });
    const token = req.params._meta?.progressToken;
    let step = 0;
    const progress =
      token === undefined
        ? undefined
        : async (message: string) => {
            step += 1;
            await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: step, message } });
          };
    const cancelled = calls?.signalOf(extra.requestId);
    const signal = cancelled ? AbortSignal.any([extra.signal, cancelled]) : extra.signal;
    const out = await callMcpTool(tool, req.params.arguments, { gateway: rt.gateway, defaultAgentId: rt.config.defaultAgentId, progress, signal });
    if (out.ok) return { content: [{ type: 'text', text: JSON.stringify(out.value) }], structuredContent: out.value as Record<string, unknown> };
    const error = { code: out.code, message: out.message, ...(out.issues ? { issues: out.issues } : {}) };
    const own = out.value && typeof out.value === 'object' ? (out.value as Record<string, unknown>) : {};
    return { content: [{ type: 'text', text: `${out.code}: ${out.message}` }], structuredContent: { ...own, status: 'error', error }, isError: true };
  });
  return server;
}

/** The request schemas of the methods this server answers: the SDK parses them inside its handlers, where a bad shape becomes -32603. */
const REQUEST_SCHEMAS: Record<string, { safeParse(v: unknown): { success: boolean; error?: { issues: Array<{ path: PropertyKey[]; message: string }> } } }> = {
  initialize: InitializeRequestSchema,
  ping: PingRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
};

/** Why a request's params do not fit its method, or null (notifications, responses, unknown methods: the SDK's to answer). */
function paramsProblem(msg: unknown): { id: string | number; message: string } | null {
  if (!msg || typeof msg !== 'object' || Array.isArray(msg)) return null;
  const { id, method } = msg as { id?: unknown; method?: unknown };
  if ((typeof id !== 'string' && typeof id !== 'number') || typeof method !== 'string' || !Object.hasOwn(REQUEST_SCHEMAS, method)) return null;
  const r = REQUEST_SCHEMAS[method]!.safeParse(msg);
  if (!r.success) {
    const i = r.error!.issues[0]!;
    return { id, message: `invalid params: ${i.path.map(String).join('.')}: ${i.message}` };
  }
  // An unknown tool is invalid params too (-32602, CONTRACT §10): in a batch, it holds the others back as a bad shape does.
  const name = (msg as { params?: { name?: unknown } }).params?.name;
  if (method === 'tools/call' && typeof name === 'string' && !byName.has(name)) return { id, message: `unknown tool: ${name}` };
  return null;
}

const jsonError = (status: number, code: number, message: string, dataCode: string, headers: Record<string, string> = {}) =>
  Response.json({ jsonrpc: '2.0', id: null, error: { code, message, data: { code: dataCode } } }, { status, headers });

/** RFC 6750 §3.1: a request without a token gets the scheme alone; one whose token is wrong, `invalid_token`. */
const bearerChallenge = (req: Request) => ({ 'www-authenticate': /^bearer\s+\S/i.test(req.headers.get('authorization') ?? '') ? 'Bearer error="invalid_token"' : 'Bearer' });

/** Whether a message is a JSON-RPC 2.0 request, notification or response at all (valid JSON that is not one is -32600). */
function isJsonRpc(m: unknown): boolean {
  if (!m || typeof m !== 'object' || Array.isArray(m)) return false;
  const o = m as Record<string, unknown>;
  if (o.jsonrpc !== '2.0') return false;
  // An id, when there is one, is a string or an integer (MCP: not null, unlike plain JSON-RPC): `null`, an object, a
  // boolean or 1.5 is not a request, where the SDK called it a parse error (-32700).
  if ('id' in o && typeof o.id !== 'string' && !Number.isInteger(o.id)) return false;
  if (typeof o.method === 'string') return true;
  return 'id' in o && ('result' in o || 'error' in o);
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The host names /mcp answers to: loopback, the address it serves on, and CROSSTALK_ALLOWED_HOSTS (comma-separated). */
function allowedHosts(): Set<string> {
  const out = new Set(LOOPBACK_HOSTS);
  const bind = process.env.HOST?.trim().toLowerCase();
  if (bind && bind !== '0.0.0.0' && bind !== '::') out.add(bind.includes(':') && !bind.startsWith('[') ? `[${bind}]` : bind);
  for (const h of (process.env.CROSSTALK_ALLOWED_HOSTS ?? '').split(',')) if (h.trim()) out.add(h.trim().toLowerCase());
  return out;
}

/** The Host header's name without its port ('[::1]:3000' → '[::1]'). */
const hostName = (host: string) => (host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0]!).toLowerCase();

/**
 * One request to /mcp. From a browser (it sends an Origin): a Host this server answers to and its own Origin — a web
 * page must not reach it, also not through DNS rebinding, where the page's Origin and Host are both the attacker's
 * name. Then, from anyone, the bearer token: an MCP client (no Origin) may reach it by any name, as a container's
 * service name or a machine's address (CONTRACT §10).
 */
export async function handleMcp(rt: FullRuntime, req: Request): Promise<Response> {
  const host = req.headers.get('host');
  if (req.headers.get('origin') !== null) {
    if (host !== null && !allowedHosts().has(hostName(host))) return jsonError(403, -32001, `Host ${host} refused (CROSSTALK_ALLOWED_HOSTS)`, 'forbidden');
    if (!isSameOrigin(req.headers)) return jsonError(403, -32001, 'foreign Origin refused', 'forbidden');
  }
  if (!isAuthorized(req.headers, rt.token, { method: req.method })) return jsonError(401, -32001, 'unauthorized', 'unauthorized', bearerChallenge(req));
  let parsedBody: unknown;
  if (req.method === 'POST') {
    // The body is read here (under the same cap) so its nesting is checked before the SDK's schemas walk it.
    const raw = await readCapped(req, MAX_BODY_BYTES);
    if (raw === null) return jsonError(413, -32600, 'request body larger than 1 MiB', 'payload_too_large');
    // A leading BOM is dropped, as the SDK's own body reader (TextDecoder) drops it.
    const text = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
    try {
      parsedBody = JSON.parse(text);
    } catch {
      // Not JSON: the SDK answers it (after its Accept and Content-Type checks), from the text read here.
      req = new Request(req.url, { method: req.method, headers: req.headers, body: text, signal: req.signal });
    }
    if (parsedBody !== undefined && jsonTooDeep(text, Array.isArray(parsedBody) ? 2 : 1)) return jsonError(400, -32600, TOO_DEEP_MESSAGE, 'invalid_request');
    // Valid JSON that is not JSON-RPC (an empty batch, `{"foo":1}`) is an Invalid Request (-32600), not a parse error.
    if (parsedBody !== undefined && (Array.isArray(parsedBody) ? !parsedBody.length || !parsedBody.every(isJsonRpc) : !isJsonRpc(parsedBody)))
      return jsonError(400, -32600, Array.isArray(parsedBody) && !parsedBody.length ? 'invalid request: an empty batch' : 'invalid request: not a JSON-RPC 2.0 message', 'invalid_request');
    // Params that do not fit their method are -32602 (invalid params), before the SDK's handlers parse them. A batch
    // holding one runs none of its requests (MCP 2025-11-25 has no batches) and answers each: the others are -32600,
    // naming the request that held the batch back (it answered the errors alone, and the rest were lost unanswered).
    const all: unknown[] = Array.isArray(parsedBody) ? parsedBody : [parsedBody];
    const problems = all.map(paramsProblem);
    const first = problems.find((p) => p !== null);
    if (first) {
      const errors = all.flatMap((m, i) => {
        const p = problems[i];
        if (p) return [{ jsonrpc: '2.0', id: p.id, error: { code: ErrorCode.InvalidParams, message: p.message, data: { code: 'invalid_request' } } }];
        const id = m && typeof m === 'object' ? (m as { id?: unknown }).id : undefined;
        if (typeof id !== 'string' && typeof id !== 'number') return []; // a notification, answered by nothing
        const message = `not run: request ${JSON.stringify(first.id)} of this batch has invalid params, and a batch runs whole or not at all`;
        return [{ jsonrpc: '2.0', id, error: { code: ErrorCode.InvalidRequest, message, data: { code: 'invalid_request' } } }];
      });
      return Response.json(Array.isArray(parsedBody) ? errors : errors[0]);
    }
  }
  const messages: unknown[] = parsedBody === undefined ? [] : Array.isArray(parsedBody) ? parsedBody : [parsedBody];
  await shareCancels(rt);
  const missed = cancelCalls(callsOf(rt), messages);
  if (missed.length && rt.cluster) {
    const cluster = rt.cluster;
    for (const c of missed) await cluster.publish(cancelChannel(cluster.channel), JSON.stringify(c)).catch((e: unknown) => rt.log.warn({ err: (e as Error).message }, 'mcp: could not pass a cancel to the other processes'));
  }
  const closed = new AbortController();
  const calls = trackCalls(callsOf(rt), messages, closed.signal);
  req.signal?.addEventListener('abort', () => closed.abort(), { once: true });
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, maxRequestBodySize: MAX_BODY_BYTES });
  const server = mcpServer(rt, calls);
  await server.connect(transport);
  let res: Response;
  try {
    res = await transport.handleRequest(req, parsedBody === undefined ? undefined : { parsedBody });
  } catch (e) {
    calls.done();
    rt.log.error({ err: e }, 'mcp request failed');
    return jsonError(500, -32603, 'internal error', 'internal');
  }
  // The answer streams (SSE) after this returns: the calls stay registered until the body ends or the client closes it.
  if (!res.body) {
    calls.done();
    return res;
  }
  const reader = res.body.getReader();
  const answers = calls.any ? dropCancelledAnswers(calls) : undefined;
  const out = new ReadableStream<Uint8Array>({
    async pull(controller) {
      // Read on until there is something to pass on: a pull that enqueues nothing is not called again (the stream
      // stalled after a chunk that held only a cancelled call's answer, probe C).
      for (;;) {
        const { value, done } = await reader.read();
        if (done) {
          const rest = answers?.end();
          if (rest?.length) controller.enqueue(rest);
          calls.done();
          controller.close();
          return;
        }
        const passed = answers ? answers.push(value) : value;
        if (passed.length) {
          controller.enqueue(passed);
          return;
        }
      }
    },
    cancel(reason) {
      closed.abort();
      calls.done();
      return reader.cancel(reason);
    },
  });
  return new Response(out, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/**
 * The answer stream (SSE) of a POST without the answers to calls the client cancelled: MCP's receiver of
 * `notifications/cancelled` does not answer the request (the call's handler still ends, so the SDK closes the stream
 * once every other request of the POST is answered). Events pass whole, in order; progress notifications stay.
 */
function dropCancelledAnswers(calls: { cancelled(id: unknown): boolean }): { push(chunk: Uint8Array): Uint8Array; end(): Uint8Array } {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let pending = '';
  const keep = (event: string) => {
    const data = event
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''))
      .join('\n');
    if (!data) return true;
    try {
      const m = JSON.parse(data) as { id?: unknown; method?: unknown; result?: unknown; error?: unknown };
      return !(m.method === undefined && ('result' in m || 'error' in m) && calls.cancelled(m.id));
    } catch {
      return true;
    }
  };
  const take = (final: boolean) => {
    const events = pending.split('\n\n');
    pending = final ? '' : events.pop()!;
    const out = events.filter((e) => e && keep(e)).map((e) => `${e}\n\n`);
    return encoder.encode(out.join(''));
  };
  return {
    push(chunk) {
      pending += decoder.decode(chunk, { stream: true });
      return take(false);
    },
    end() {
      pending += decoder.decode();
      return take(true);
    },
  };
}
