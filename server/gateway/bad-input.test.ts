// Bad input gets the CONTRACT §3/§6 error, the server keeps serving, and nothing stored is lost.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer } from '../testing/harness';

let s: TestServer;
const call = (method: string, params: unknown) => s.rpcRaw({ jsonrpc: '2.0', id: 7, method, params });

beforeAll(async () => {
  s = await startTestServer();
  const r = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:main', message: 'keep me' });
  await s.rpc('agent.wait', { runId: r.runId });
});
afterAll(async () => {
  await s?.close();
});

describe('JSON-RPC envelope', () => {
  it('malformed JSON is -32700', async () => {
    const r = await s.rpcRaw('{"jsonrpc": "2.0", "method": ');
    expect(r.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
  });
  it('a non-object request is -32600', async () => {
    expect((await s.rpcRaw('42')).body.error.code).toBe(-32600);
    expect((await s.rpcRaw({ jsonrpc: '1.0', id: 1, method: 'agent' })).body.error.code).toBe(-32600);
  });
  it('an unknown method is -32601', async () => {
    const r = await call('agents.explode', {});
    expect(r.body).toMatchObject({ id: 7, error: { code: -32601 } });
    expect((await call('toString', {})).body.error.code).toBe(-32601);
  });
  it('a notification is never answered, not even when its params are refused; it does not run', async () => {
    const before = (await s.rpc<{ sessions: unknown[] }>('sessions.list', {})).sessions.length;
    // Before: HTTP 200 with a -32602 error (id null) for each of these.
    for (const params of [{}, [], { sessionKey: 'agent:main:note-bad', message: 'x', nope: 1 }, { sessionKey: 'agent:main:note-bad', message: 'a\u0000b' }]) {
      const r = await s.rpcRaw({ jsonrpc: '2.0', method: 'agent', params });
      expect(r.status, JSON.stringify(params)).toBe(204);
    }
    const batch = await s.rpcRaw([
      { jsonrpc: '2.0', method: 'agent', params: { x: 1 } },
      { jsonrpc: '2.0', id: 3, method: 'agents.list', params: {} },
    ]);
    expect(batch.body.map((x: any) => x.id)).toEqual([3]);
    expect((await s.rpc<{ sessions: unknown[] }>('sessions.list', {})).sessions.length).toBe(before);
  });
  it('batches answer each request', async () => {
    const r = await s.rpcRaw([
      { jsonrpc: '2.0', id: 1, method: 'agents.list', params: {} },
      { jsonrpc: '2.0', id: 2, method: 'nope' },
    ]);
    expect(r.body.map((x: any) => [x.id, x.error?.code ?? 'ok'])).toEqual([
      [1, 'ok'],
      [2, -32601],
    ]);
  });
});

describe('params', () => {
  it('wrong param types are -32602 listing the fields', async () => {
    const r = await call('agent', { sessionKey: 42, message: ['x'] });
    expect(r.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request' } });
    expect(r.body.error.data.issues.map((i: any) => i.path).sort()).toEqual(['message', 'sessionKey']);
  });
  it('an answer field named __proto__ is refused as unknown, not dropped unsaid (probe B)', async () => {
    // Raw text: a JS literal's __proto__ would set the prototype instead of sending the key.
    const r = await s.rpcRaw('{"jsonrpc":"2.0","id":3,"method":"approvals.resolve","params":{"approvalId":"apr_x","decision":"accept","content":{"name":"bob","__proto__":{"x":1}}}}');
    expect(r.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request', issues: [{ path: 'content.__proto__', message: 'is not a field of the requested schema' }] } });
    // Without it, the same call gets past validation to the lookup.
    const ok = await s.rpcRaw('{"jsonrpc":"2.0","id":4,"method":"approvals.resolve","params":{"approvalId":"apr_x","decision":"accept","content":{"name":"bob"}}}');
    expect(ok.body.error).toMatchObject({ code: -32004, data: { code: 'unknown_approval' } });
  });
  it('unknown params are refused', async () => {
    const r = await call('agent.wait', { runId: 'x', bogus: true });
    expect(r.body.error.code).toBe(-32602);
    // A cursor given to a method that takes none is an unknown key, not a cursor that does not decode (probe S).
    const board = await call('runs.board', { cursor: 'abc' });
    expect(board.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request', issues: [{ path: 'cursor', message: 'unknown key "cursor"' }] } });
  });
  it('limit 0 and 10,000 are -32602', async () => {
    for (const limit of [0, 10_000, 1.5]) {
      const r = await call('chat.history', { sessionKey: 'agent:main:main', limit });
      expect(r.body.error).toMatchObject({ code: -32602 });
      expect(r.body.error.data.issues[0].path).toBe('limit');
    }
    expect((await call('sessions.list', { limit: 201 })).body.error.code).toBe(-32602);
    expect((await call('sessions.list', { limit: 200 })).body.result.sessions.length).toBe(1);
  });
  it('a garbage cursor or one from another list is invalid_cursor, before any lookup', async () => {
    const garbage = await call('chat.history', { sessionKey: 'agent:main:main', cursor: '%%%not-a-cursor' });
    expect(garbage.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_cursor' } });
    // A genuine cursor of another list (sessions.list, two sessions so there is a next page) is refused by chat.history.
    const other = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:second', message: 'two' });
    await s.rpc('agent.wait', { runId: other.runId });
    const list = await s.rpc<{ next_cursor: string | null }>('sessions.list', { limit: 1 });
    expect(list.next_cursor).toEqual(expect.any(String));
    expect((await call('chat.history', { sessionKey: 'agent:main:main', cursor: list.next_cursor })).body.error).toMatchObject({ code: -32602, data: { code: 'invalid_cursor' } });
    // …and so is chat.history's own cursor handed to sessions.list.
    const page = await s.rpc<{ next_cursor: string | null }>('chat.history', { sessionKey: 'agent:main:main', limit: 1 });
    expect(page.next_cursor).toEqual(expect.any(String));
    expect((await call('sessions.list', { cursor: page.next_cursor })).body.error).toMatchObject({ code: -32602, data: { code: 'invalid_cursor' } });
    const foreign = Buffer.from(JSON.stringify({ l: 'sessions', s: '|', k: ['2020', 'x'] })).toString('base64url');
    const r = await call('chat.history', { sessionKey: 'agent:main:main', cursor: foreign });
    expect(r.body.error.data.code).toBe('invalid_cursor');
    const otherSession = Buffer.from(JSON.stringify({ l: 'history', s: 'agent:main:other|', k: [5] })).toString('base64url');
    expect((await call('chat.history', { sessionKey: 'agent:main:main', cursor: otherSession })).body.error.data.code).toBe('invalid_cursor');
    // validation before lookup: an unknown session with a bad cursor is still invalid_cursor
    expect((await call('chat.history', { sessionKey: 'agent:main:nowhere', cursor: 'zzz' })).body.error.data.code).toBe('invalid_cursor');
    // a cursor holding NUL does not decode either (it was invalid_request, the NUL rule answering first)
    expect((await call('sessions.list', { cursor: 'a\u0000b' })).body.error).toMatchObject({ code: -32602, data: { code: 'invalid_cursor', issues: [{ path: 'cursor' }] } });
  });
  it('session keys with spaces, non-ASCII or an unknown agent are refused; upper case is lowercased', async () => {
    for (const sessionKey of ['agent:main:has space', 'agent:main:café', 'agent:main:', 'main', 'agent:main:emoji😀']) {
      const r = await call('agent', { sessionKey, message: 'x' });
      expect(r.body.error, sessionKey).toMatchObject({ code: -32602 });
    }
    const unknown = await call('agent', { sessionKey: 'agent:ghost:main', message: 'x' });
    expect(unknown.body.error).toMatchObject({ code: -32004, data: { code: 'unknown_agent' } });
    const upper = await call('chat.history', { sessionKey: 'AGENT:MAIN:MAIN' });
    expect(upper.body.result.messages.length).toBe(2);
  });
  it('a lone UTF-16 surrogate (valid JSON: "\\ud800") is refused at the edge, like NUL: two keys that differ in one were stored as one key (probe S)', async () => {
    // Before: both stores keep UTF-8, where a lone surrogate is U+FFFD, so keys "k\ud800" and "k\udfff" were one key and
    // the second message answered the first's run and was never run; a message read back differently from what was sent.
    const key = (esc: string, session: string, message: string) =>
      `{"jsonrpc":"2.0","id":5,"method":"agent","params":{"sessionKey":"agent:main:${session}","message":"${message}","idempotencyKey":"k-${esc}"}}`;
    for (const [esc, session] of [['\\ud800', 'lone-a'], ['\\udfff', 'lone-b']]) {
      const r = await s.rpcRaw(key(esc!, session!, 'hi'));
      expect(r.body.error, esc).toMatchObject({ code: -32602, data: { code: 'invalid_request', issues: [{ path: 'idempotencyKey' }] } });
    }
    const msg = await s.rpcRaw('{"jsonrpc":"2.0","id":5,"method":"agent","params":{"sessionKey":"agent:main:surrogate","message":"/reply a\\ud800b"}}');
    expect(msg.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request', issues: [{ path: 'message' }] } });
    const label = await s.rpcRaw('{"jsonrpc":"2.0","id":5,"method":"sessions.patch","params":{"sessionKey":"agent:main:main","label":"x\\udc00"}}');
    expect(label.body.error).toMatchObject({ code: -32602, data: { issues: [{ path: 'label' }] } });
    const sessions = (await s.rpc<{ sessions: Array<{ sessionKey: string }> }>('sessions.list', {})).sessions.map((x) => x.sessionKey);
    expect(sessions.filter((k) => /lone|surrogate/.test(k))).toEqual([]);
    // A well-formed pair and a different well-formed key each start their own run; an escaped backslash before "ud800" is text.
    const pair = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:surrogate', message: '/reply \ud83d\ude00 and \\ud800', idempotencyKey: 'k-\ufffd' });
    expect(await s.rpc('agent.wait', { runId: pair.runId })).toMatchObject({ status: 'ok', response: '\ud83d\ude00 and \\ud800' });
    // A forged cursor holding a lone surrogate does not decode (its JSON escape survives base64).
    const forged = Buffer.from('{"l":"sessions","s":"|","k":["2026-01-01T00:00:00Z","x\\ud800"]}').toString('base64url');
    expect((await call('sessions.list', { cursor: forged })).body.error).toMatchObject({ code: -32602, data: { code: 'invalid_cursor' } });
  });
  it('a forged cursor whose key or time holds NUL is invalid_cursor on both stores (probe S: -32603 on PostgreSQL)', async () => {
    for (const k of [['2026-01-01T00:00:00Z', 'x\u0000'], ['2026-01-01T00:00:00Z\u0000', 'x']]) {
      const cursor = Buffer.from(JSON.stringify({ l: 'sessions', s: '|', k })).toString('base64url');
      expect((await call('sessions.list', { cursor })).body.error, JSON.stringify(k)).toMatchObject({ code: -32602, data: { code: 'invalid_cursor' } });
    }
    const approvals = Buffer.from(JSON.stringify({ l: 'approvals_history', s: '|', k: ['2026-01-01T00:00:00Z', 'a\u0000'] })).toString('base64url');
    expect((await call('approvals.history', { cursor: approvals })).body.error).toMatchObject({ code: -32602, data: { code: 'invalid_cursor' } });
  });
  it('a message over 256 KiB is refused', async () => {
    const r = await call('agent', { sessionKey: 'agent:main:main', message: 'x'.repeat(256 * 1024 + 1) });
    expect(r.body.error).toMatchObject({ code: -32602 });
    expect(r.body.error.data.issues[0].path).toBe('message');
  });
  it('agent.wait on an unknown run is -32004 unknown_run', async () => {
    const r = await call('agent.wait', { runId: 'run_nope' });
    expect(r.body.error).toMatchObject({ code: -32004, data: { code: 'unknown_run' } });
  });
  it('resolving an unknown approval is unknown_approval', async () => {
    const r = await call('approvals.resolve', { approvalId: 'apr_nope', decision: 'deny' });
    expect(r.body.error).toMatchObject({ code: -32004, data: { code: 'unknown_approval' } });
    expect((await call('approvals.resolve', { approvalId: 'x', decision: 'maybe' })).body.error.code).toBe(-32602);
  });
  it('patching an unknown session is unknown_session; a bad model spec is invalid', async () => {
    expect((await call('sessions.patch', { sessionKey: 'agent:main:nope', label: 'x' })).body.error.data.code).toBe('unknown_session');
    expect((await call('sessions.patch', { sessionKey: 'agent:main:main', model: 'madeup:x' })).body.error).toMatchObject({ code: -32602 });
  });
});

describe('transport limits and auth', () => {
  it('a 2 MiB body is -32600 payload_too_large', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'agent', params: { sessionKey: 'agent:main:main', message: 'x'.repeat(2 * 1024 * 1024) } });
    const r = await s.rpcRaw(body);
    expect(r.status).toBe(413);
    expect(r.body.error).toMatchObject({ code: -32600, data: { code: 'payload_too_large' } });
  });
  it('a missing or wrong token is -32001 unauthorized', async () => {
    for (const token of [null, 'wrong', TEST_TOKEN + 'x']) {
      const r = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'agents.list', params: {} }, token);
      expect(r.status).toBe(401);
      expect(r.body.error).toMatchObject({ code: -32001, data: { code: 'unauthorized' } });
    }
    const ev = await fetch(`${s.url}/api/gateway/events?sessionKey=agent:main:main`);
    expect(ev.status).toBe(401);
    expect((await fetch(`${s.url}/api/metrics`)).status).toBe(401);
  });
  it('after all that the server keeps serving and nothing stored is lost', async () => {
    const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:main' });
    expect(h.messages.map((m) => m.content)).toEqual(['echo: keep me', 'keep me']);
    const r = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:main', message: 'still here' });
    expect(await s.rpc('agent.wait', { runId: r.runId })).toMatchObject({ status: 'ok', response: 'echo: still here' });
  });
});
