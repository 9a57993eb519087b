// Seeded request generators for every HTTP entry point (JSON-RPC, tRPC, A2A, MCP, channel inbound, login, SSE): nesting, sizes, encodings, wrong types.
import crypto from 'node:crypto';
import { AUTH_COOKIE } from '../auth';
import { MAX_JSON_DEPTH } from '../http/json-depth';

export const ENTRIES = ['jsonrpc', 'trpc', 'a2a', 'mcp', 'inbound', 'login', 'sse'] as const;
export type Entry = (typeof ENTRIES)[number];

export interface FuzzCase {
  entry: Entry;
  method: 'GET' | 'POST' | 'DELETE' | 'PUT';
  /** Path and query string, on the gateway's origin. */
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

/** What the generators need to know of the server under test. */
export interface FuzzWorld {
  token: string;
  /** Inbound channels configured, with the HMAC secret of the generic webhook channel. */
  webhookSecret: string;
  channels: readonly string[];
  agents: readonly string[];
}

export type Rng = () => number;

/** mulberry32: a small, fast seeded generator (the same seed gives the same cases on every machine). */
export function rng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The seed of one case: a case is replayed alone from (seed, entry, index). */
export function caseSeed(seed: number, entry: Entry, index: number): number {
  return crypto.createHash('sha256').update(`${seed}:${entry}:${index}`).digest().readUInt32LE(0);
}

const GATEWAY_METHODS = ['agent', 'agent.wait', 'agent.cancel', 'send', 'sessions.list', 'sessions.patch', 'sessions.delete', 'chat.history', 'status', 'sessions.usage', 'sessions.search', 'sessions.compact', 'pairings.list', 'pairings.resolve', 'approvals.list', 'approvals.inbox', 'approvals.resolve', 'approvals.history', 'agents.list', 'delegates.list', 'delegates.messages', 'delegates.dismiss', 'delegates.resume', 'delegates.stats', 'webhooks.list', 'nope', '__proto__', 'constructor', 'toString', 'hasOwnProperty'];
const FIELDS = ['sessionKey', 'message', 'runId', 'timeoutMs', 'cursor', 'limit', 'queueMode', 'idempotencyKey', 'webhook', 'url', 'secret', 'approvalId', 'decision', 'reason', 'content', 'channel', 'to', 'accountId', 'threadId', 'replyTo', 'code', 'conversation_id', 'deleteTranscript', 'includeTools', 'model', 'label', 'spawnDepth', 'thinkingLevel', 'query', 'kind', 'agentId', 'state', 'deliveryId', 'lastEventId', '__proto__', 'constructor'];
const TRPC_PROCEDURES = ['sessions.list', 'sessions.patch', 'sessions.delete', 'sessions.search', 'sessions.usage', 'sessions.compact', 'chat.history', 'chat.send', 'chat.cancel', 'approvals.list', 'approvals.resolve', 'approvals.history', 'agents.list', 'events.onEvent', 'delegates.list', 'delegates.messages', 'delegates.dismiss', 'status.get', 'pairings.list', 'pairings.resolve', 'nope', '__proto__', 'sessions.__proto__', 'constructor'];
const A2A_METHODS = ['message/send', 'message/stream', 'tasks/get', 'tasks/cancel', 'tasks/resubscribe', 'tasks/pushNotificationConfig/set', 'tasks/pushNotificationConfig/get', 'tasks/pushNotificationConfig/list', 'tasks/pushNotificationConfig/delete', 'agent/getAuthenticatedExtendedCard', 'SendMessage', 'SendStreamingMessage', 'GetTask', 'CancelTask', 'SubscribeToTask', 'ListTasks', 'CreateTaskPushNotificationConfig', 'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs', 'DeleteTaskPushNotificationConfig', 'GetExtendedAgentCard', 'nope', '__proto__'];
const A2A_FIELDS = ['message', 'id', 'taskId', 'contextId', 'messageId', 'role', 'parts', 'kind', 'text', 'metadata', 'configuration', 'blocking', 'historyLength', 'pushNotificationConfig', 'url', 'token', 'name', 'tenant', 'content', 'acceptedOutputModes', 'pageSize', 'pageToken', '__proto__'];
const MCP_METHODS = ['initialize', 'tools/list', 'tools/call', 'ping', 'notifications/initialized', 'resources/list', 'prompts/list', 'completion/complete', 'logging/setLevel', 'nope', '__proto__'];
const MCP_TOOLS = ['crosstalk_agents', 'crosstalk_send', 'crosstalk_history', 'crosstalk_wait', 'nope', '__proto__', ''];
const MCP_FIELDS = ['sessionKey', 'agentId', 'message', 'mode', 'timeoutSeconds', 'runId', 'limit', 'cursor', '__proto__'];

const ODD_STRINGS = [
  '', ' ', 'agent:main:main', 'AGENT:MAIN:MAIN', 'agent:main:fuzz', 'agent:main:\u212Aelvin', 'agent:nobody:x', `agent:main:${'a'.repeat(600)}`, '\u0000', '\uD800', '\uDFFF\uD800', '\u202Eevil', 'e\u0301', '😀'.repeat(50),
  '%', '%E0%A4%A', '%00', '../../token', '..%2f..%2fdata', `run_${'0'.repeat(40)}`, 'apr_x', '/sleep 5', '/fail boom', '/silent', '/tool exec {"command":"echo hi"}', '/tool nope {}', '/reply x',
  '{"a":1}', 'null', '-1', '1e309', 'NaN', 'telegram', 'webhook', 'sync', 'async', 'https://127.0.0.1:9/', 'http://[::1]/', 'http://169.254.169.254/', 'javascript:alert(1)', '<script>alert(1)</script>',
  Buffer.from(JSON.stringify({ l: 'history', s: 'agent:main:main|', k: ['x'] })).toString('base64url'), 'eyJ0eCI6MX0', '1:2:3', '999999999999999999999',
];

/** JSON text nesting `levels` objects or arrays, around the limit or far past it (as text: JSON.stringify would overflow first). */
export function deepJson(levels: number, arrays: boolean): string {
  return arrays ? '['.repeat(levels) + ']'.repeat(levels) : '{"a":'.repeat(Math.max(0, levels - 1)) + '{}' + '}'.repeat(Math.max(0, levels - 1));
}

/** encodeURIComponent that also takes lone surrogates (sent as the invalid UTF-8 a careless client would send). */
export function enc(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return encodeURIComponent(s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD')).replaceAll('%EF%BF%BD', '%ED%A0%80');
  }
}

export function makeGen(r: Rng) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const int = (n: number) => Math.floor(r() * n);
  /** A nesting depth: mostly around the limit, sometimes far past it. */
  const depth = () => (r() < 0.7 ? MAX_JSON_DEPTH - 3 + int(7) : pick([200, 1000, 10_000, 100_000]));
  const value = (fields: readonly string[] = FIELDS, d = 0): unknown => {
    switch (int(13)) {
      case 0: return pick(ODD_STRINGS);
      case 1: return Math.floor(r() * 2 ** 53) * (r() < 0.5 ? -1 : 1);
      case 2: return pick([0, -0, 1.5, -1, 201, 600_001, 1e308, 2 ** 31, -(2 ** 63), 0.1]);
      case 3: return r() < 0.5;
      case 4: return null;
      case 5: return d < 3 ? Array.from({ length: int(4) }, () => value(fields, d + 1)) : [];
      case 6: return d < 3 ? Object.fromEntries(Array.from({ length: int(4) }, () => [pick(fields), value(fields, d + 1)])) : {};
      case 7: return 'x'.repeat(int(300_000)); // around the 256 KiB message limit
      case 8: return pick(['allow_once', 'allow_always', 'deny', 'accept', 'decline', 'cancel', 'approve', 'steer', 'followup', 'collect', 'interrupt', 'reject', 'main', 'subagent', 'channel', 'other', 'dead', 'accepted']);
      case 9: return crypto.randomBytes(int(40)).toString('latin1');
      case 10: return String.fromCharCode(...Array.from({ length: int(20) }, () => int(0x10000)));
      default: return pick(ODD_STRINGS) + pick(ODD_STRINGS);
    }
  };
  const obj = (fields: readonly string[]) => Object.fromEntries(Array.from({ length: int(5) }, () => [pick(fields), value(fields)]));
  /** A JSON text for a value, sometimes with a deep member spliced in (the part JSON.stringify cannot build). */
  const jsonText = (v: unknown, deepChance = 0.1): string => {
    const text = JSON.stringify(v) ?? 'null';
    if (r() >= deepChance) return text;
    const deep = deepJson(depth(), r() < 0.5);
    return text.startsWith('{') && text !== '{}' ? `{"deep":${deep},${text.slice(1)}` : r() < 0.5 ? deep : `{"deep":${deep}}`;
  };
  /** The body's bytes: usually UTF-8, sometimes with a BOM, as UTF-16, with invalid UTF-8 spliced in, or truncated. */
  const encode = (text: string): string | Buffer => {
    const k = r();
    if (k < 0.8) return text;
    if (k < 0.84) return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]);
    if (k < 0.88) return Buffer.from(text, 'utf16le');
    if (k < 0.92) {
      const b = Buffer.from(text);
      const at = int(b.length + 1);
      return Buffer.concat([b.subarray(0, at), Buffer.from(pick([[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x00]])), b.subarray(at)]);
    }
    if (k < 0.96) return text.slice(0, int(text.length));
    return Buffer.from(text, 'latin1');
  };
  /** Sizes around the 1 MiB body cap. */
  const hugeText = () => `{"jsonrpc":"2.0","id":1,"method":"agent","params":{"sessionKey":"agent:main:main","message":"${'y'.repeat(pick([1024 * 1024 - 80, 1024 * 1024 + 10, 2 * 1024 * 1024]))}"}}`;
  return { pick, int, depth, value, obj, jsonText, encode, hugeText };
}

type Gen = ReturnType<typeof makeGen>;

function authHeaders(g: Gen, w: FuzzWorld, base: Record<string, string> = {}): Record<string, string> {
  const a = g.int(100);
  if (a < 82) return { ...base, authorization: `Bearer ${w.token}` };
  if (a < 86) return base;
  if (a < 90) return { ...base, authorization: g.pick(['Bearer', 'Bearer wrong', 'Basic x', `bearer ${w.token}x`, 'Bearer \u00ff', `Bearer ${w.token} ${w.token}`]) };
  if (a < 95) return { ...base, cookie: `${AUTH_COOKIE}=${g.pick(['%', enc(w.token), '%E0', 'a=b=c', ''])}`, origin: g.pick(['http://evil.example', 'null', 'http://127.0.0.1:1']) };
  return { ...base, cookie: g.pick([';;;', '=', `${AUTH_COOKIE}=%`, `${AUTH_COOKIE}=${enc(w.token)}`]), 'sec-fetch-site': g.pick(['same-origin', 'cross-site', 'none']) };
}

const CONTENT_TYPES = ['application/json', 'application/json', 'application/json; charset=utf-8', 'application/json; charset=utf-16', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', ''];

function jsonRpcBody(g: Gen, methods: readonly string[], params: () => unknown): string {
  const k = g.int(100);
  const one = () => ({ jsonrpc: '2.0', id: g.int(1000), method: g.pick(methods), params: params() });
  if (k < 6) return JSON.stringify(one()).slice(0, g.int(80)); // truncated
  if (k < 14) return `{"jsonrpc":"2.0","id":1,"method":${JSON.stringify(g.pick(methods))},"params":${deepJson(g.depth(), g.int(2) === 0)}}`;
  if (k < 17) return deepJson(g.depth(), g.int(2) === 0);
  if (k < 21) return JSON.stringify(Array.from({ length: g.int(120) }, one));
  if (k < 27) return JSON.stringify({ jsonrpc: g.pick(['1.0', 2, null, '2.0', '2.0 ']), id: g.value(), method: g.value(), params: g.value() });
  if (k < 30) return crypto.randomBytes(g.int(200)).toString('latin1');
  if (k < 31) return g.hugeText();
  return g.jsonText(one(), 0.06);
}

export function jsonrpcCase(g: Gen, w: FuzzWorld): FuzzCase {
  const body = jsonRpcBody(g, GATEWAY_METHODS, () => (g.int(10) === 0 ? g.value() : g.obj(FIELDS)));
  return { entry: 'jsonrpc', method: 'POST', path: g.pick(['/api/gateway', '/api/gateway', '/api/gateway?x=1']), headers: authHeaders(g, w, { 'content-type': g.pick(CONTENT_TYPES) }), body: g.encode(body) };
}

export function trpcCase(g: Gen, w: FuzzWorld): FuzzCase {
  const proc = g.pick(TRPC_PROCEDURES);
  const batch = g.int(4) === 0;
  const input = () => (g.int(8) === 0 ? g.value() : g.obj(FIELDS));
  const inputText = () => {
    const one = g.int(10) === 0 ? deepJson(g.depth(), g.int(2) === 0) : g.jsonText(input(), 0.08);
    return batch ? `{"0":${one}${g.int(3) === 0 ? `,"1":${JSON.stringify(input())}` : ''}}` : one;
  };
  const path = `/api/trpc/${batch ? `${proc},${g.pick(TRPC_PROCEDURES)}` : proc}`;
  const headers = authHeaders(g, w, { 'content-type': g.pick(CONTENT_TYPES), ...(g.int(3) === 0 ? { 'trpc-accept': 'application/jsonl' } : {}) });
  if (g.int(2) === 0) {
    const raw = g.int(6) === 0 ? g.pick(['%', '%E0%A4%A', '{', 'undefined', '%7B%22a%22']) : enc(inputText());
    // Keep the URL under node's header limit most of the time (a longer one is a 431, also fine).
    const q = `${batch ? 'batch=1&' : ''}input=${raw.length > 12_000 && g.int(4) ? raw.slice(0, 12_000) : raw}${g.int(5) === 0 ? `&lastEventId=${enc(String(g.value()))}` : ''}`;
    return { entry: 'trpc', method: 'GET', path: `${path}?${q}`, headers };
  }
  return { entry: 'trpc', method: 'POST', path: `${path}${batch ? '?batch=1' : ''}`, headers, body: g.int(30) === 0 ? g.hugeText() : g.encode(inputText()) };
}

export function a2aCase(g: Gen, w: FuzzWorld): FuzzCase {
  const part = () => (g.int(4) === 0 ? g.obj(A2A_FIELDS) : { kind: 'text', text: g.int(3) === 0 ? String(g.value()) : g.pick(['hi', '/sleep 5', '/silent', 'x'.repeat(300_000), '\u0000']) });
  const message = () => ({ messageId: g.pick(['m1', '', String(g.value())]), role: g.pick(['user', 'agent', 'ROLE_USER', 1, null]), parts: g.int(5) === 0 ? g.value() : [part()], ...(g.int(2) ? { contextId: g.value() } : {}), ...(g.int(4) === 0 ? { taskId: g.value() } : {}) });
  // v1.0 (protobuf JSON) shapes: parts as {text}/{raw}/{url}/{data}, roles as ROLE_*, push configs flat.
  const v1Message = () => ({ messageId: g.pick(['m1', '', g.value()]), role: g.pick(['ROLE_USER', 'ROLE_AGENT', 'ROLE_UNSPECIFIED', 'user', 7]), parts: g.int(5) === 0 ? g.value() : [g.pick([{ text: g.pick(['hi', '/sleep 5', g.value()]) }, { raw: g.pick(['aGk=', '%%%', 5]) }, { url: g.value() }, { data: g.value() }, g.obj(A2A_FIELDS)])], contextId: g.value(), ...(g.int(3) === 0 ? { taskId: g.value(), referenceTaskIds: g.value(), extensions: g.value() } : {}) });
  const v1Params = () => {
    const k = g.int(5);
    if (k === 0) return { message: v1Message(), configuration: { acceptedOutputModes: g.value(), historyLength: g.value(), returnImmediately: g.value(), taskPushNotificationConfig: g.obj(A2A_FIELDS) }, metadata: g.value() };
    if (k === 1) return { taskId: g.value(), id: g.value(), url: g.pick(['http://127.0.0.1:9/', 'https://169.254.169.254/', g.value()]), token: g.value(), authentication: g.value() };
    if (k === 2) return { contextId: g.value(), status: g.pick(['TASK_STATE_WORKING', 'x', 3]), pageSize: g.value(), pageToken: g.value(), historyLength: g.value() };
    return { message: v1Message() };
  };
  const params = () => {
    const k = g.int(8);
    if (k >= 6) return v1Params();
    if (k === 0) return g.value(A2A_FIELDS);
    if (k === 1) return g.obj(A2A_FIELDS);
    if (k === 2) return { id: g.value(A2A_FIELDS), pushNotificationConfig: g.obj(A2A_FIELDS) };
    if (k === 3) return { id: g.pick([5, 'x', null, `run_${'0'.repeat(8)}`]), ...(g.int(2) ? { historyLength: g.value() } : {}) };
    return { message: g.int(6) === 0 ? g.value(A2A_FIELDS) : message(), ...(g.int(3) === 0 ? { configuration: { blocking: g.value(), acceptedOutputModes: g.value() } } : {}) };
  };
  const headers = authHeaders(g, w, { 'content-type': g.pick(CONTENT_TYPES), ...(g.int(2) ? { 'A2A-Version': g.pick(['1.0', '1.0', '1.0', '0.3', '9.9', '', 'x']) } : {}) });
  if (g.int(25) === 0) return { entry: 'a2a', method: 'GET', path: `/a2a/${g.pick([...w.agents, 'nobody', '%2e%2e'])}/.well-known/agent-card.json`, headers };
  const agent = g.int(10) === 0 ? g.pick(['nobody', 'MAIN', '%00', 'a'.repeat(300)]) : g.pick(w.agents);
  return { entry: 'a2a', method: g.int(30) === 0 ? 'GET' : 'POST', path: `/a2a/${agent}`, headers, body: g.encode(jsonRpcBody(g, A2A_METHODS, params)) };
}

export function mcpCase(g: Gen, w: FuzzWorld): FuzzCase {
  // Sends that would wait are kept short: a sync send to a run waiting for approval waits its whole timeout.
  const args = () => {
    const a = g.int(6) === 0 ? g.value(MCP_FIELDS) : g.obj(MCP_FIELDS);
    return a && typeof a === 'object' && !Array.isArray(a) ? { ...a, timeoutSeconds: g.pick([0, 1, -1, 'x', 1e9 * 0 + 1]), mode: g.pick(['async', 'async', 'sync', 'x']) } : a;
  };
  const params = () => {
    const k = g.int(5);
    if (k === 0) return g.value(MCP_FIELDS);
    if (k === 1) return { protocolVersion: g.pick(['2025-11-25', '2025-06-18', '1999-01-01', 5]), capabilities: g.value(MCP_FIELDS), clientInfo: { name: g.value(), version: g.value() } };
    return { name: g.pick(MCP_TOOLS), arguments: args(), ...(g.int(4) === 0 ? { _meta: { progressToken: g.value() } } : {}) };
  };
  const headers = authHeaders(g, w, {
    'content-type': g.pick(CONTENT_TYPES),
    accept: g.pick(['application/json, text/event-stream', 'application/json, text/event-stream', 'application/json', 'text/event-stream', '*/*']),
    ...(g.int(3) === 0 ? { 'mcp-protocol-version': g.pick(['2025-11-25', '2025-06-18', 'x', '']) } : {}),
    ...(g.int(8) === 0 ? { 'mcp-session-id': g.pick(['x', '', '\u00ff']) } : {}),
  });
  const method = g.int(12) === 0 ? g.pick(['GET', 'DELETE', 'PUT'] as const) : 'POST';
  return { entry: 'mcp', method, path: g.pick(['/mcp', '/mcp', '/mcp?x=%']), headers, body: method === 'POST' || method === 'PUT' ? g.encode(jsonRpcBody(g, MCP_METHODS, params)) : undefined };
}

export function inboundCase(g: Gen, w: FuzzWorld): FuzzCase {
  const channel = g.int(5) === 0 ? g.pick(['nochannel', '%2e%2e', 'a'.repeat(70), 'WEBHOOK', '%ZZ', 'web%00hook', '', '__proto__']) : g.pick(w.channels);
  const raw = g.pick([
    () => g.jsonText({ from: g.value(), text: g.value(), messageId: g.value(), chatType: g.pick(['direct', 'group', 'channel', 5]), conversationId: g.value() }, 0.1),
    () => g.jsonText({ update_id: g.int(1e9), message: { message_id: g.value(), chat: { id: g.pick([1, -1, 'x', null]), type: g.value() }, from: { id: g.value() }, text: g.value() }, callback_query: g.int(4) === 0 ? g.obj(FIELDS) : undefined }, 0.1),
    () => g.jsonText({ type: g.pick(['event_callback', 'url_verification', 'block_actions', 1]), challenge: g.value(), event: g.obj(['type', 'user', 'text', 'channel', 'ts', 'thread_ts', 'bot_id']) }, 0.1),
    () => `payload=${enc(g.jsonText({ type: 'block_actions', actions: g.value(), user: g.value() }, 0.3))}`,
    () => g.jsonText({ type: g.value(), id: g.value(), data: g.value() }, 0.1),
    () => crypto.randomBytes(g.int(300)).toString('latin1'),
    () => deepJson(g.depth(), g.int(2) === 0),
    () => JSON.stringify({ from: 'x', text: 'y'.repeat(300 * 1024) }),
  ])();
  const sign = g.int(2) === 0;
  const text = typeof raw === 'string' ? raw : String(raw);
  const ts = String(Math.floor(Date.now() / 1000) - (g.int(4) === 0 ? 3600 : 0));
  const headers: Record<string, string> = {
    'content-type': g.pick(['application/json', 'text/plain', 'application/x-www-form-urlencoded']),
    ...(sign
      ? { 'x-crosstalk-timestamp': ts, 'x-crosstalk-signature': `sha256=${crypto.createHmac('sha256', w.webhookSecret).update(g.int(2) ? `${ts}.${text}` : text).digest('hex')}` }
      : { 'x-crosstalk-signature': g.pick(['', 'sha256=00', 'x', 'sha256=' + 'z'.repeat(64)]) }),
    ...(g.int(3) === 0 ? { 'x-telegram-bot-api-secret-token': g.pick(['tg', 'no', '']) } : {}),
    ...(g.int(4) === 0 ? { 'x-slack-signature': g.pick(['v0=00', '']), 'x-slack-request-timestamp': g.pick([ts, 'x', '-1']) } : {}),
    ...(g.int(5) === 0 ? { 'x-signature-ed25519': g.pick(['00', 'zz', '']), 'x-signature-timestamp': ts } : {}),
  };
  return { entry: 'inbound', method: 'POST', path: `/api/channels/${channel}`, headers, body: g.encode(text) };
}

export function loginCase(g: Gen, w: FuzzWorld): FuzzCase {
  const token = g.pick([
    () => enc(w.token),
    () => enc(String(g.value())),
    () => g.pick(['%', '%E0%A4%A', '%00', '%FF%FE', '', '+', '%2B', `${enc(w.token)}%00`]),
    () => 'a'.repeat(g.pick([1, 100, 8000, 20_000])),
    () => enc(w.token) + '&token=' + enc(String(g.value())),
  ])();
  const query = g.int(10) === 0 ? g.pick(['', '?', '?token', '?=&&=', '?token[]=x', `?%74oken=${token}`]) : `?token=${token}`;
  return { entry: 'login', method: g.int(15) === 0 ? 'POST' : 'GET', path: `/login${query}`, headers: g.int(4) === 0 ? { 'x-forwarded-proto': g.pick(['https', 'http', 'x']), host: g.pick(['127.0.0.1', 'evil.example', '']) } : {} };
}

export function sseCase(g: Gen, w: FuzzWorld): FuzzCase {
  const param = (name: string) => `${name}=${g.int(6) === 0 ? g.pick(['%', '%E0%A4%A', '%00', '']) : enc(String(g.value()))}`;
  const parts: string[] = [];
  if (g.int(3)) parts.push(g.int(3) ? `sessionKey=${enc(g.pick(['agent:main:main', 'agent:main:fuzz', 'AGENT:MAIN:MAIN']))}` : param('sessionKey'));
  if (g.int(3) === 0) parts.push(param('runId'));
  if (g.int(3) === 0) parts.push(param('lastEventId'));
  if (g.int(8) === 0) parts.push(param('sessionKey'));
  const headers = authHeaders(g, w, g.int(3) === 0 ? { 'last-event-id': g.pick(['0', '-1', 'x', '1e309', '%', '9'.repeat(40), Buffer.from('{"tx":1}').toString('base64url'), 'eyJ0eCI6MX0', '\u00ff']) } : {});
  return { entry: 'sse', method: 'GET', path: `/api/gateway/events${parts.length ? `?${parts.join('&')}` : ''}`, headers };
}

export const GENERATORS: Record<Entry, (g: Gen, w: FuzzWorld) => FuzzCase> = {
  jsonrpc: jsonrpcCase,
  trpc: trpcCase,
  a2a: a2aCase,
  mcp: mcpCase,
  inbound: inboundCase,
  login: loginCase,
  sse: sseCase,
};
