// A bounded, seeded fuzz pass over JSON-RPC and the inbound channel endpoints: the server never crashes or hangs, every answer is a §6 code.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_COOKIE } from '../auth';
import { ERROR_CODES } from '../errors';
import { startTestServer, TEST_TOKEN, type TestServer } from '../testing/harness';
import { signWebhook } from '../webhooks/signature';

/** How many requests each pass sends (bounded count; the suite's timeout bounds the time). */
const RPC_CASES = 1200;
const INBOUND_CASES = 400;
const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed);
const SECRET = 'fuzz-hook';

function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const METHODS = ['agent', 'agent.wait', 'agent.cancel', 'send', 'sessions.list', 'sessions.patch', 'sessions.delete', 'chat.history', 'status', 'sessions.usage', 'sessions.search', 'pairings.list', 'pairings.resolve', 'approvals.list', 'approvals.resolve', 'agents.list', 'delegates.list', 'delegates.messages', 'delegates.dismiss', 'webhooks.list', 'nope', '__proto__', 'constructor', 'toString'];
const FIELDS = ['sessionKey', 'message', 'runId', 'timeoutMs', 'cursor', 'limit', 'queueMode', 'idempotencyKey', 'webhook', 'approvalId', 'decision', 'reason', 'channel', 'to', 'code', 'conversation_id', 'deleteTranscript', 'includeTools', 'model', 'label', 'spawnDepth', 'query', 'kind', 'agentId', '__proto__', 'constructor'];
const ODD_STRINGS = [
  '', ' ', 'agent:main:main', 'AGENT:MAIN:MAIN', 'agent:main:\u212Aelvin', 'agent:nobody:x', 'agent:main:' + 'a'.repeat(600), '\u0000', '\uD800', '\uDFFF\uD800', '\u202Eevil', 'e\u0301', '😀'.repeat(50), '%', '%E0%A4%A', '../../token',
  'run_' + '0'.repeat(40), 'apr_x', '/sleep 5', '/fail boom', '/tool exec {"command":"echo hi"}', '{"a":1}', 'null', '-1', '1e309', 'telegram', 'webhook', 'https://127.0.0.1:9/', 'http://[::1]/', 'javascript:alert(1)',
  Buffer.from(JSON.stringify({ l: 'history', s: 'agent:main:main|', k: ['x'] })).toString('base64url'),
];
const ALLOWED_RPC = new Set([-32700, -32600, -32601, -32602, -32001, -32004, -32009, -32000, -32603]);

function gen(r: () => number) {
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const value = (depth = 0): unknown => {
    switch (Math.floor(r() * 12)) {
      case 0: return pick(ODD_STRINGS);
      case 1: return Math.floor(r() * 2 ** 53) * (r() < 0.5 ? -1 : 1);
      case 2: return pick([0, -0, 1.5, NaN, Infinity, 1e308, -1, 201, 600_001]);
      case 3: return r() < 0.5;
      case 4: return null;
      case 5: return depth < 3 ? Array.from({ length: Math.floor(r() * 4) }, () => value(depth + 1)) : [];
      case 6: return depth < 3 ? Object.fromEntries(Array.from({ length: Math.floor(r() * 4) }, () => [pick(FIELDS), value(depth + 1)])) : {};
      case 7: return 'x'.repeat(Math.floor(r() * 300_000)); // around the 256 KiB message limit
      case 8: return pick(['allow_once', 'allow_always', 'deny', 'approve', 'steer', 'reject', 'main', 'subagent']);
      case 9: return crypto.randomBytes(Math.floor(r() * 40)).toString('latin1');
      default: return pick(ODD_STRINGS) + pick(ODD_STRINGS);
    }
  };
  const params = () => Object.fromEntries(Array.from({ length: Math.floor(r() * 5) }, () => [pick(FIELDS), value()]));
  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
  return (): { body: string; headers: Record<string, string> } => {
    const auth = r();
    const headers: Record<string, string> =
      auth < 0.8 ? { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` }
      : auth < 0.85 ? { 'content-type': 'application/json' }
      : auth < 0.9 ? { 'content-type': 'application/json', authorization: pick(['Bearer', 'Bearer wrong', 'Basic x', `bearer ${TEST_TOKEN}x`, '\u00ff']) }
      : auth < 0.95 ? { 'content-type': pick(['text/plain', 'application/json']), cookie: `${AUTH_COOKIE}=${pick(['%', TEST_TOKEN, '%E0', 'a=b=c', ''])}`, origin: pick(['http://evil.example', 'null', 'http://127.0.0.1:1']) }
      : { 'content-type': 'application/json', cookie: pick([';;;', '=', `${AUTH_COOKIE}=%`]) };
    const kind = r();
    let body: string;
    if (kind < 0.08) body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: pick(METHODS), params: params() }).slice(0, Math.floor(r() * 60)); // truncated
    else if (kind < 0.1) body = deep(Math.floor(r() * 200_000));
    else if (kind < 0.12) body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'status', params: JSON.parse(deep(1000)) });
    else if (kind < 0.15) body = JSON.stringify(Array.from({ length: Math.floor(r() * 120) }, () => ({ jsonrpc: '2.0', id: Math.floor(r() * 9), method: pick(METHODS), params: params() })));
    else if (kind < 0.2) body = JSON.stringify({ jsonrpc: pick(['1.0', 2, null, '2.0']), id: value(), method: value(), params: value() });
    else if (kind < 0.22) body = crypto.randomBytes(Math.floor(r() * 200)).toString('latin1');
    else body = JSON.stringify({ jsonrpc: '2.0', id: Math.floor(r() * 1000), method: pick(METHODS), params: r() < 0.1 ? value() : params() });
    return { body, headers };
  };
}

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ config: { channels: { webhook: { secret: SECRET }, telegram: { botToken: 't', webhookSecret: 'tg' } } } });
});
afterAll(async () => {
  await s?.close();
});

async function inParallel<T>(n: number, width: number, fn: (i: number) => Promise<T>) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) await fn(next++);
  }));
}

describe('fuzz', () => {
  it(`JSON-RPC: ${RPC_CASES} malformed, mistyped, huge, odd-Unicode, deeply nested and wrongly authorised requests`, { timeout: 120_000 }, async () => {
    const next = gen(rng(SEED));
    const cases = Array.from({ length: RPC_CASES }, next);
    const bad: string[] = [];
    let tried = 0;
    await inParallel(cases.length, 8, async (i) => {
      const c = cases[i]!;
      const res = await fetch(`${s.url}/api/gateway`, { method: 'POST', headers: c.headers, body: c.body, signal: AbortSignal.timeout(20_000) });
      tried++;
      const text = await res.text();
      if (res.status === 204) return;
      let out: any;
      try {
        out = JSON.parse(text);
      } catch {
        bad.push(`#${i}: not JSON (${res.status}): ${text.slice(0, 80)}`);
        return;
      }
      for (const one of Array.isArray(out) ? out : [out]) {
        if ('result' in one) continue;
        const e = one.error;
        if (!e || !ALLOWED_RPC.has(e.code) || !ERROR_CODES.includes(e.data?.code) || e.data.code === 'internal') bad.push(`#${i}: ${JSON.stringify(e).slice(0, 200)} for ${c.body.slice(0, 120)}`);
      }
    });
    console.log(`fuzz: ${tried} JSON-RPC requests tried (seed ${SEED})`);
    expect(bad).toEqual([]);
    // Alive and answering.
    expect(await s.rpc('status', {})).toHaveProperty('activeRuns');
  });

  it(`inbound channels: ${INBOUND_CASES} requests with bad names, bad signatures and garbage bodies`, { timeout: 120_000 }, async () => {
    const r = rng(SEED + 1);
    const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
    const bad: string[] = [];
    let tried = 0;
    await inParallel(INBOUND_CASES, 8, async () => {
      const channel = pick(['webhook', 'webhook', 'telegram', 'slack', 'nochannel', '%2e%2e', 'a'.repeat(70), 'WEBHOOK', '%ZZ', 'web%00hook']);
      const raw = pick([
        () => JSON.stringify({ from: pick(ODD_STRINGS), text: pick(ODD_STRINGS), messageId: pick(ODD_STRINGS) }),
        () => JSON.stringify({ update_id: r() * 1e9, message: { chat: { id: pick([1, -1, 'x', null]) }, text: pick(ODD_STRINGS) } }),
        () => crypto.randomBytes(Math.floor(r() * 300)).toString('latin1'),
        () => '['.repeat(50_000),
        () => JSON.stringify({ from: 'x', text: 'y'.repeat(300 * 1024) }),
      ])();
      const sign = r() < 0.5;
      const headers: Record<string, string> = {
        'content-type': pick(['application/json', 'text/plain', 'application/x-www-form-urlencoded']),
        ...(sign ? signWebhook(SECRET, raw, Date.now() - pick([0, 0, 0, 301_000, -301_000])) : { 'x-crosstalk-signature': pick(['', 'sha256=00', 'x']), 'x-crosstalk-timestamp': pick(['', '0', 'x', '1e99', String(Math.floor(Date.now() / 1000))]) }),
        ...(r() < 0.3 ? { 'x-telegram-bot-api-secret-token': pick(['tg', 'no', '']) } : {}),
      };
      const res = await fetch(`${s.url}/api/channels/${channel}`, { method: 'POST', headers, body: raw, signal: AbortSignal.timeout(20_000) });
      tried++;
      const text = await res.text();
      let out: any;
      try {
        out = JSON.parse(text);
      } catch {
        bad.push(`${channel}: not JSON (${res.status}) ${text.slice(0, 80)}`);
        return;
      }
      if (res.status >= 400 && (!ERROR_CODES.includes(out?.error?.code) || out.error.code === 'internal')) bad.push(`${channel} ${res.status}: ${text.slice(0, 200)}`);
    });
    console.log(`fuzz: ${tried} inbound channel requests tried (seed ${SEED + 1})`);
    expect(bad).toEqual([]);
    expect(await s.rpc('status', {})).toHaveProperty('activeRuns');
  });
});
