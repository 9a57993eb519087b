// Issue 12 items 6–13 and 15 over real HTTP: SSE backpressure, delete vs steer, SSRF, parallel delegates, failed steer, de-dup, keys, cursors, counts.
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer, until } from '../testing/harness';
import { guardedDispatcher, isPrivateAddress } from '../webhooks/guard';
import { signWebhook } from '../webhooks/signature';

const SECRET = 'defects-hook';
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({
    config: {
      agents: [{ id: 'main', limits: { maxDelegatesPerParent: 2 } }, { id: 'researcher' }],
      channels: { webhook: { url: 'http://127.0.0.1:9/out', secret: SECRET, dmPolicy: 'open' } },
    },
  });
});
afterAll(async () => {
  await s?.close();
});

type Wait = { status: string; response?: string; error?: string; continuedIn?: string };

describe('6. SSE backpressure on the node:http path', () => {
  it('a paused client holds events back on the server (bounded) instead of buffering the whole stream, and then gets all of them', async () => {
    const key = 'agent:main:paused-client';
    const port = Number(new URL(s.url).port);
    const sock = net.connect(port, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    sock.pause();
    sock.write(`GET /api/gateway/events?sessionKey=${key} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TEST_TOKEN}\r\n\r\n`);
    await until(() => (s.rt.bus as any).bySession.get(key)?.size === 1);
    const sub = [...(s.rt.bus as any).bySession.get(key)][0];
    // ~30 MB of events: far more than the kernel's socket buffers hold.
    const big = 'x'.repeat(240 * 1024);
    const RUNS = 40;
    for (let i = 0; i < RUNS; i++) {
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: `${i}${big}` });
      await s.rpc('agent.wait', { runId });
    }
    await s.rt.bus.drain();
    // Not pulled: the subscription still holds events (or reads the log later) — the server did not write them all out.
    expect(sub.queue.length > 0 || sub.catchingUp).toBe(true);
    // Resumed: every run's end arrives, in order, none twice.
    sock.resume();
    let buf = '';
    const ends: string[] = [];
    await new Promise<void>((resolve, reject) => {
      sock.on('data', (d: Buffer) => {
        buf += d.toString('latin1');
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = frame.split('\n').find((l) => l.startsWith('data: '));
          if (data && data.includes('"phase":"end"')) {
            const ev = JSON.parse(data.slice(6));
            if (ev.stream === 'lifecycle') ends.push(ev.runId); // not the compaction events these long messages cause
          }
          if (ends.length === RUNS) resolve();
        }
      });
      sock.on('error', reject);
    });
    sock.destroy();
    expect(new Set(ends).size).toBe(RUNS);
  }, 120_000); // 40 runs of 240 KB each and ~30 MB through one socket: 35–40 s at load 13 on 2 cores
});

describe('7. sessions.delete with deleteTranscript', () => {
  it('messages steered into the aborted run do not run, and no deleted row comes back when the key is reused', async () => {
    const key = 'agent:main:delete-me';
    const first = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/sleep 5000\n/reply too late' });
    const steered = await s.rpc<{ runId: string; status: string }>('agent', { sessionKey: key, message: 'steered into the doomed run' });
    expect(steered).toEqual({ runId: first.runId, status: 'steered' });
    await s.rpc('sessions.delete', { sessionKey: key, deleteTranscript: true });
    await s.rt.orchestrator.idle();
    const fresh = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'a new start' });
    await s.rpc('agent.wait', { runId: fresh.runId });
    await s.rt.orchestrator.idle();
    const h = await s.rpc<{ messages: Array<{ content: string }> }>('chat.history', { sessionKey: key, includeTools: true });
    expect(h.messages.map((m) => m.content).reverse()).toEqual(['a new start', 'echo: a new start']);
    const runs = await s.rt.store.db.selectFrom('runs').select(['id', 'status', 'input']).where('session_key', '=', key).execute();
    expect(runs.filter((r) => r.input.includes('steered into the doomed run') && r.status === 'ok')).toEqual([]);
  });
});

describe('8. SSRF', () => {
  it('refuses NAT64 and 6to4 targets', () => {
    for (const ip of ['64:ff9b::7f00:1', '64:ff9b::a00:1', '2002:7f00:1::1', '2002:c0a8:101::1', '64:ff9b:1::a00:1']) expect(isPrivateAddress(ip), ip).toBe(true);
    expect(isPrivateAddress('2606:4700:4700::1111')).toBe(false);
    expect(isPrivateAddress('8.8.8.8')).toBe(false);
  });

  it('connects only to the address its own lookup checked: a name that resolves to loopback at connect time is refused', async () => {
    const target = http.createServer((_req, res) => res.end('reached'));
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    const url = `http://localhost:${(target.address() as AddressInfo).port}/`;
    try {
      // No pre-check here at all (as after a rebinding): the connection itself refuses.
      const err = await undiciFetch(url, { dispatcher: guardedDispatcher(false) }).then(
        () => null,
        (e: Error & { cause?: { code?: string } }) => e,
      );
      expect(err?.cause?.code).toBe('EPRIVATEADDR');
      const ok = await undiciFetch(url, { dispatcher: guardedDispatcher(true) });
      expect(await ok.text()).toBe('reached');
    } finally {
      target.close();
    }
  });
});

describe('9. parallel delegate_agent calls in one step', () => {
  it('respect maxDelegatesPerParent', async () => {
    const line = '/tool delegate_agent {"agent_id":"researcher","prompt":"/sleep 300"}';
    const r = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:parallel-delegates', message: Array(5).fill(line).join('\n') });
    const w = await s.rpc<Wait>('agent.wait', { runId: r.runId });
    const results = w.response!.split('\n').map((l) => JSON.parse(l.slice('delegate_agent: '.length)));
    expect(results.filter((x) => x.status === 'ok')).toHaveLength(2);
    expect(results.filter((x) => x.status === 'error' && x.error.code === 'limit_exceeded')).toHaveLength(3);
  });
});

describe('10. a steer into a run that then fails', () => {
  it('answers steered with the run id, and agent.wait on it leads to the run that answered the message', async () => {
    const key = 'agent:main:steer-then-fail';
    const r = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/sleep 300\n/fail the model broke' });
    const st = await s.rpc<{ runId: string; status: string }>('agent', { sessionKey: key, message: 'are you there' });
    expect(st).toEqual({ runId: r.runId, status: 'steered' });
    const w = await s.rpc<Wait>('agent.wait', { runId: st.runId });
    expect(w.status).toBe('error');
    expect(w.continuedIn).toEqual(expect.any(String));
    const w2 = await s.rpc<Wait>('agent.wait', { runId: w.continuedIn });
    expect(w2).toMatchObject({ status: 'ok', response: 'echo: are you there' });
    // Asked again later, from the store.
    expect((await s.rpc<Wait>('agent.wait', { runId: st.runId })).continuedIn).toBe(w.continuedIn);
  });

  it('a run cancelled with a message steered into it: the message still runs, and agent.wait on the run says where', async () => {
    const key = 'agent:main:steer-then-cancel';
    const r = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/sleep 3000\n/reply never' });
    const st = await s.rpc<{ runId: string; status: string }>('agent', { sessionKey: key, message: 'still there?' });
    expect(st).toEqual({ runId: r.runId, status: 'steered' });
    await s.rpc('agent.cancel', { runId: r.runId });
    const w = await s.rpc<Wait>('agent.wait', { runId: st.runId });
    expect(w).toMatchObject({ status: 'error', error: 'cancelled', continuedIn: expect.any(String) });
    const next = await s.rpc<Wait & { usage: { inputTokens: number } }>('agent.wait', { runId: w.continuedIn });
    expect(next).toMatchObject({ status: 'ok', response: 'echo: still there?' });
    expect(next.usage.inputTokens).toBeGreaterThan(0);
    // The cancelled run's usage is its own (none), also once its follow-up has ended. Before: the follow-up's, counted twice.
    expect(await s.rpc<Wait>('agent.wait', { runId: r.runId })).toMatchObject({ continuedIn: w.continuedIn, usage: { inputTokens: 0, outputTokens: 0 } });
  });
});

describe('11. inbound de-duplication', () => {
  it('the same messageId posted twice at once lands once', async () => {
    const body = JSON.stringify({ from: 'twin', text: 'only once', messageId: `dup-${Date.now()}` });
    const headers = { 'content-type': 'application/json', ...signWebhook(SECRET, body) };
    const res = await Promise.all(Array.from({ length: 4 }, () => fetch(`${s.url}/api/channels/webhook`, { method: 'POST', headers, body })));
    expect(res.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    await s.rt.orchestrator.idle();
    const runs = await s.rt.store.db.selectFrom('runs').select('id').where('session_key', '=', 'agent:main:webhook:direct:twin').execute();
    expect(runs).toHaveLength(1);
  });
});

describe('12. session key validation order', () => {
  it('canonicalises only ASCII: the Kelvin sign is refused, ASCII upper case is lowered', async () => {
    const kelvin = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'agent', params: { sessionKey: 'agent:main:\u212Aelvin', message: 'hi' } });
    expect(kelvin.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request' } });
    const dotless = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'chat.history', params: { sessionKey: 'agent:main:\u0130stanbul' } });
    expect(dotless.body.error).toMatchObject({ code: -32602 });
    const upper = await s.rpc<{ runId: string }>('agent', { sessionKey: 'AGENT:MAIN:Upper-Case', message: 'hi' });
    const row = await s.rt.store.getRun(upper.runId);
    expect(row?.session_key).toBe('agent:main:upper-case');
  });
});

describe('13. forged cursors', () => {
  const forge = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  it('are invalid_cursor, position by position, on every list', async () => {
    await s.rpc('agent.wait', { runId: (await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:main', message: 'x' })).runId });
    const cases: Array<[string, Record<string, unknown>]> = [
      ['chat.history', { sessionKey: 'agent:main:main', cursor: forge({ l: 'history', s: 'agent:main:main|', k: ['abc'] }) }],
      ['chat.history', { sessionKey: 'agent:main:main', cursor: forge({ l: 'history', s: 'agent:main:main|', k: [1.5] }) }],
      ['chat.history', { sessionKey: 'agent:main:main', cursor: forge({ l: 'history', s: 'agent:main:main|', k: [-3] }) }],
      ['chat.history', { sessionKey: 'agent:main:main', cursor: forge({ l: 'history', s: 'agent:main:main|', k: [1e300] }) }],
      ['sessions.list', { cursor: forge({ l: 'sessions', s: '|', k: [12, 'agent:main:main'] }) }],
      ['sessions.list', { cursor: forge({ l: 'sessions', s: '|', k: ['not a time', 'agent:main:main'] }) }],
      ['delegates.list', { sessionKey: 'agent:main:main', cursor: forge({ l: 'delegates', s: 'agent:main:main', k: [{}, 'x'] }) }],
    ];
    for (const [method, params] of cases) {
      const r = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method, params });
      expect(r.body.error, `${method} ${JSON.stringify(params)}`).toMatchObject({ code: -32602, data: { code: 'invalid_cursor', issues: [{ path: 'cursor' }] } });
    }
  });

  it('an empty or over-long cursor is invalid_cursor too, and -32602 names the field it is about', async () => {
    for (const cursor of ['', 'x'.repeat(2049), 'garbage']) {
      const r = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'sessions.list', params: { cursor } });
      expect(r.body.error, `cursor of ${cursor.length}`).toMatchObject({ code: -32602, data: { code: 'invalid_cursor', issues: [{ path: 'cursor' }] } });
    }
    // A cursor beside another bad field is an invalid request; an unknown key is named by its own path.
    const both = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'sessions.list', params: { cursor: '', limit: 0 } });
    expect(both.body.error.data.code).toBe('invalid_request');
    const extra = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'sessions.list', params: { extra: 1 } });
    expect(extra.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request', issues: [{ path: 'extra' }] } });
  });
});

describe('15. status.pendingApprovals', () => {
  it('counts past 500', async () => {
    const t = await startTestServer();
    try {
      const now = new Date().toISOString();
      const rows = Array.from({ length: 501 }, (_, i) => ({
        id: `apr_bulk_${i}`, session_key: 'agent:main:main', run_id: 'run_bulk', call_id: `c${i}`, tool: 'exec', args: '{}', status: 'pending', decision: null, reason: null, requested_at: now, resolved_at: null, trust: null,
      }));
      await t.rt.store.db.insertInto('approvals').values(rows).execute();
      expect((await t.rpc<{ pendingApprovals: number }>('status', {})).pendingApprovals).toBe(501);
    } finally {
      await t.close();
    }
  });
});

describe('NUL in strings (found by the fuzz pass on PostgreSQL)', () => {
  it('is refused at the edge as invalid_request on both stores, over JSON-RPC and inbound channels', async () => {
    const r = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'agent', params: { sessionKey: 'agent:main:nul', message: 'a\u0000b' } });
    expect(r.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request' } });
    const p = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'sessions.patch', params: { sessionKey: 'agent:main:main', label: 'x\u0000' } });
    expect(p.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request', issues: [{ path: 'label' }] } });
    const body = JSON.stringify({ from: 'nul', text: 'hi\u0000there', messageId: `nul-${Date.now()}` });
    const res = await fetch(`${s.url}/api/channels/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signWebhook(SECRET, body) },
      body,
    });
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe('invalid_request');
  });
});
