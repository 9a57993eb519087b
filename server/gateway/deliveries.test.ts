// deliveries.get / .list / .retry over JSON-RPC (CONTRACT §3, §9), ids in tool results, and `delivery` events on both ends' streams.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, startTestServer, type TestServer, until } from '../testing/harness';

let s: TestServer;
/** `failNext`: that many more requests get 500 whatever `status` says. */
let hook: { url: string; status: number; hits: number; failNext: number; close(): Promise<void> };

beforeAll(async () => {
  const h: typeof hook = { url: '', status: 500, hits: 0, failNext: 0, close: async () => undefined };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      h.hits++;
      if (h.failNext > 0) {
        h.failNext--;
        res.writeHead(500).end();
      } else res.writeHead(h.status).end();
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  h.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  h.close = () => new Promise<void>((ok) => (server.closeAllConnections(), server.close(() => ok())));
  hook = h;
  s = await startTestServer({ config: { agents: [{ id: 'main' }, { id: 'researcher' }], webhooks: { allowPrivateNetwork: true, retryBaseMs: 20, maxAttempts: 2, timeoutMs: 500 } } });
});
afterAll(async () => {
  await s?.close();
  await hook?.close();
});

const turn = async (sessionKey: string, message: string) => {
  const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey, message });
  const w = await s.rpc<{ status: string; response: string }>('agent.wait', { runId });
  return JSON.parse(w.response.replace(/^\w+: /, ''));
};
const rpcError = async (method: string, params: unknown) => (await s.rpcRaw({ jsonrpc: '2.0', id: 1, method, params })).body.error;

describe('deliveries', () => {
  it('an async send: its id in the result, accepted → delivered → running → answered as events on both ends, and its callback a delivery of its own', async () => {
    const from = 'agent:main:dl-events';
    const to = 'agent:researcher:dl-events';
    const watch = (sessionKey: string) =>
      readSse(`${s.url}/api/gateway/events?sessionKey=${encodeURIComponent(sessionKey)}`, { until: (evs) => evs.some((e) => e.stream === 'delivery' && e.data.kind === 'session_message' && e.data.state === 'answered'), timeoutMs: 15_000 });
    const before = s.rt.bus.subscriberCount;
    const [fromEvents, toEvents] = [watch(from), watch(to)];
    await until(() => s.rt.bus.subscriberCount >= before + 2); // both streams are subscribed (live from here)
    const out = await turn(from, '/tool sessions_send {"sessionKey":"agent:researcher:dl-events","message":"/reply 42","mode":"async"}');
    expect(out).toEqual({ status: 'accepted', runId: expect.stringMatching(/^run_/), deliveryId: expect.stringMatching(/^dlv_/) });
    for (const evs of [await fromEvents, await toEvents]) {
      const mine = evs.filter((e) => e.stream === 'delivery' && e.data.deliveryId === out.deliveryId);
      expect(mine.map((e) => e.data.phase)).toEqual(['accepted', 'delivered', 'running', 'answered']);
      expect(mine[0].data).toMatchObject({ deliveryId: out.deliveryId, kind: 'session_message', state: 'accepted', from: { sessionKey: from }, to: { sessionKey: to } });
    }
    // `answered` means the answer went back (CONTRACT §9): on the caller's stream the callback's own delivery is
    // `delivered` (its row is in the caller's transcript) before the send is `answered`.
    const fromEvs = await fromEvents;
    const rowAt = fromEvs.findIndex((e) => e.stream === 'delivery' && e.data.kind === 'callback' && e.data.phase === 'delivered');
    const answeredAt = fromEvs.findIndex((e) => e.stream === 'delivery' && e.data.deliveryId === out.deliveryId && e.data.phase === 'answered');
    expect(rowAt).toBeGreaterThanOrEqual(0);
    expect(rowAt).toBeLessThan(answeredAt);
    const d = await s.rpc<any>('deliveries.get', { deliveryId: out.deliveryId });
    expect(d).toMatchObject({ deliveryId: out.deliveryId, kind: 'session_message', from: { sessionKey: from, runId: expect.any(String) }, to: { sessionKey: to }, state: 'answered', runId: out.runId, attempts: 0 });
    expect(d.from).toEqual({ sessionKey: from, runId: expect.any(String) }); // CONTRACT §9's `from`, nothing more
    expect(Date.parse(d.createdAt)).not.toBeNaN();
    // The target's row links back to the sender's call.
    const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: to, limit: 10 });
    expect(h.messages.find((m) => m.kind === 'inter_session').meta).toMatchObject({ fromSessionKey: from, fromCallId: expect.any(String), deliveryId: out.deliveryId });
    // The answer went back as a callback: a `callback` delivery to the caller, answered once its turn ended.
    const cb = await until(async () => {
      const l = await s.rpc<{ deliveries: any[] }>('deliveries.list', { sessionKey: from, kind: 'callback' });
      return l.deliveries[0]?.state === 'answered' ? l.deliveries[0] : null;
    });
    expect(cb).toMatchObject({ kind: 'callback', from: { sessionKey: to, runId: out.runId }, to: { sessionKey: from } });
  });

  it('a send whose callback waits behind its busy caller is answered when the callback row is written, not before', async () => {
    // CONTRACT §9: `answered` is the answer written back as the callback row. The callback of a send made before the
    // caller's next run waits in the caller's queue; the send was marked answered as that run was queued (a loaded
    // CI run saw `answered` on the caller's stream before the callback's own `delivered`).
    const from = 'agent:main:dl-busy';
    // The target takes 0.5 s; the caller's next run, 3 s, is running by the time its answer comes back.
    const out = await turn(from, '/tool sessions_send {"sessionKey":"agent:researcher:dl-busy","message":"/sleep 500","mode":"async"}');
    const { runId: sleeping } = await s.rpc<{ runId: string }>('agent', { sessionKey: from, message: '/sleep 3000' });
    const cb = await until(async () => (await s.rpc<{ deliveries: any[] }>('deliveries.list', { sessionKey: from, kind: 'callback' })).deliveries[0]);
    const settled = () => (s.rt.store.db as any).selectFrom('callbacks').select('status').where('id', '=', cb.deliveryId.replace(/^dlv_/, '')).executeTakeFirst();
    await until(async () => (await settled())?.status === 'delivered');
    expect(await s.rt.store.getRun(cb.runId)).toMatchObject({ status: expect.stringMatching(/^(queued|merged)$/) });
    expect((await s.rpc<any>('agent.wait', { runId: sleeping, timeoutMs: 0 })).status).toBe('timeout'); // still busy
    expect(await s.rpc<any>('deliveries.get', { deliveryId: out.deliveryId })).toMatchObject({ state: 'running' });
    expect(await s.rpc<any>('deliveries.get', { deliveryId: cb.deliveryId })).toMatchObject({ state: 'accepted' });
    // The caller's run ends; the callback's row is written, and with it the send is answered.
    await s.rpc('agent.wait', { runId: sleeping, timeoutMs: 15_000 });
    await until(async () => (await s.rpc<any>('deliveries.get', { deliveryId: out.deliveryId })).state === 'answered');
    const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: from, limit: 20 });
    expect(h.messages.find((m) => m.kind === 'agent_callback_result').meta).toMatchObject({ deliveryId: cb.deliveryId, answersDeliveryId: out.deliveryId });
    expect(await s.rpc<any>('deliveries.get', { deliveryId: cb.deliveryId })).toMatchObject({ state: expect.stringMatching(/^(running|answered)$/) });
  });

  it('a send whose target run is cancelled while queued ends failed, and so does the send a cancelled callback run would have answered', async () => {
    // A queued run that never starts (agent.cancel, its session deleted) failed none of the hand-offs it carried: the
    // send stayed `accepted` for good, and a send answered by a callback row never written stayed `running`.
    const to = 'agent:researcher:dl-cancel';
    const { runId: busy } = await s.rpc<{ runId: string }>('agent', { sessionKey: to, message: '/sleep 3000' });
    await s.rpc('sessions.patch', { sessionKey: to, queueMode: 'followup' });
    const out = await turn('agent:main:dl-cancel', '/tool sessions_send {"sessionKey":"agent:researcher:dl-cancel","message":"/reply 1","mode":"async"}');
    expect(await s.rt.store.getRun(out.runId)).toMatchObject({ status: 'queued' });
    await s.rpc('agent.cancel', { runId: out.runId });
    expect(await s.rpc<any>('deliveries.get', { deliveryId: out.deliveryId })).toMatchObject({ state: 'failed', error: { code: 'interrupted', message: expect.stringMatching(/cancelled/) } });
    await s.rpc('agent.cancel', { runId: busy });

    // The callback's run queued behind its busy caller, cancelled there: the send it would have answered fails too.
    const from = 'agent:main:dl-cancel-cb';
    const sent = await turn(from, '/tool sessions_send {"sessionKey":"agent:researcher:dl-cancel-cb","message":"/sleep 500","mode":"async"}');
    await s.rpc('sessions.patch', { sessionKey: from, queueMode: 'followup' });
    const { runId: sleeping } = await s.rpc<{ runId: string }>('agent', { sessionKey: from, message: '/sleep 3000' });
    const cb = await until(async () => (await s.rpc<{ deliveries: any[] }>('deliveries.list', { sessionKey: from, kind: 'callback' })).deliveries[0]);
    await until(async () => (await s.rt.store.getRun(cb.runId))?.status === 'queued');
    await s.rpc('agent.cancel', { runId: cb.runId });
    expect(await s.rpc<any>('deliveries.get', { deliveryId: cb.deliveryId })).toMatchObject({ state: 'failed', error: { code: 'interrupted' } });
    expect(await s.rpc<any>('deliveries.get', { deliveryId: sent.deliveryId })).toMatchObject({ state: 'failed', error: { code: 'interrupted', message: expect.stringMatching(/ended before its row was written/) } });
    await s.rpc('agent.cancel', { runId: sleeping });
  });

  it('a send the target refuses names no run; a send steered into the target’s active run names that run, as the tool does', async () => {
    // Refused: the target is busy and rejects messages.
    const busy = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:researcher:dl-rj', message: '/sleep 800' });
    await s.rpc('sessions.patch', { sessionKey: 'agent:researcher:dl-rj', queueMode: 'reject' });
    const refused = await turn('agent:main:dl-rj', '/tool sessions_send {"sessionKey":"agent:researcher:dl-rj","message":"/reply x"}');
    expect(refused).toMatchObject({ status: 'error', error: { code: 'agent_busy' }, deliveryId: expect.stringMatching(/^dlv_/) });
    const r = await s.rpc<any>('deliveries.get', { deliveryId: refused.deliveryId });
    expect(r).toMatchObject({ state: 'failed', error: { code: 'agent_busy' } });
    expect(r.runId).toBeUndefined(); // it named a run that was never made
    await s.rpc('agent.wait', { runId: busy.runId });
    // Steered (the default queue mode): the tool answers with the active run's id, and so does the record.
    const active = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:researcher:dl-st', message: '/sleep 500' });
    const steered = await turn('agent:main:dl-st', '/tool sessions_send {"sessionKey":"agent:researcher:dl-st","message":"/reply steered"}');
    expect(steered).toMatchObject({ status: 'ok', runId: active.runId, response: 'steered' });
    const d = await s.rpc<any>('deliveries.get', { deliveryId: steered.deliveryId });
    expect(d).toMatchObject({ state: 'answered', runId: active.runId });
  });

  it('delegate_agent: delivery_id in the result, each batch run its own', async () => {
    const one = await turn('agent:main:dl-deleg', '/tool delegate_agent {"agent_id":"researcher","prompt":"/reply hi"}');
    expect(one).toMatchObject({ status: 'ok', delivery_id: expect.stringMatching(/^dlv_/), response: 'hi' });
    expect(await s.rpc('deliveries.get', { deliveryId: one.delivery_id })).toMatchObject({ kind: 'delegate', state: 'answered', to: { sessionKey: one.conversation_id } });
    const batch = await turn('agent:main:dl-batch', '/tool delegate_agent {"prompt":"x","batch":[{"agent_id":"researcher","prompt":"/reply a"},{"agent_id":"researcher","prompt":"/reply b"}]}');
    const ids = batch.runs.map((r: any) => r.delivery_id);
    expect(new Set(ids).size).toBe(2);
    for (const id of ids) expect(await s.rpc('deliveries.get', { deliveryId: id })).toMatchObject({ kind: 'delegate', state: 'answered' });
  });

  it('a webhook that keeps failing ends dead after the configured attempts; deliveries.retry attempts it again under the same id', async () => {
    hook.status = 500;
    const key = 'agent:main:dl-hook';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply done', webhook: { url: hook.url } });
    await s.rpc('agent.wait', { runId });
    const dead = await until(async () => {
      const l = await s.rpc<{ deliveries: any[] }>('deliveries.list', { sessionKey: key, kind: 'webhook', state: 'dead' });
      return l.deliveries[0];
    }, 30_000);
    expect(dead).toMatchObject({ kind: 'webhook', state: 'dead', attempts: 2, to: { url: hook.url }, from: { sessionKey: key, runId }, error: { code: 'channel_error', message: expect.stringContaining('500') } });
    expect((await s.rpc<any>('status')).webhooksDead).toBeGreaterThanOrEqual(1);
    // Dead deliveries are on the board under "Failed" (CONTRACT §7), with what Retry needs.
    const board = await s.rpc<any>('runs.board', {});
    expect(board.failed.find((i: any) => i.delivery?.deliveryId === dead.deliveryId)).toMatchObject({ status: 'dead', sessionKey: key, agentId: 'main', parentChain: [key], delivery: { kind: 'webhook', to: hook.url, attempts: 2 } });
    // The retry is a fresh round of attempts on both stores: its first attempt fails too, its second gets through
    // (before, on PostgreSQL: pg-boss's retry of the spent job gave one attempt, and the delivery was dead again).
    hook.status = 200;
    hook.failNext = 1;
    expect(await s.rpc('deliveries.retry', { deliveryId: dead.deliveryId })).toEqual({ status: 'ok' });
    const again = await until(async () => {
      const d = await s.rpc<any>('deliveries.get', { deliveryId: dead.deliveryId });
      return d.state === 'delivered' || d.state === 'dead' ? d : null;
    }, 30_000);
    expect(again).toMatchObject({ deliveryId: dead.deliveryId, state: 'delivered', attempts: 4 });
    expect(again.error).toBeUndefined();
    // Delivered now: a second retry is refused.
    expect(await rpcError('deliveries.retry', { deliveryId: dead.deliveryId })).toMatchObject({ code: -32009, data: { code: 'not_retryable' } });
  });

  it('deliveries.retry rounds: webhooks.list and deliveries.get count the same attempts, and each round has maxAttempts', async () => {
    const key = 'agent:main:dl-hook-rounds';
    hook.status = 500;
    try {
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply rounds', webhook: { url: hook.url } });
      await s.rpc('agent.wait', { runId });
      const record = async (state: string, attempts: number) =>
        until(async () => {
          const [d] = (await s.rpc<{ deliveries: any[] }>('deliveries.list', { sessionKey: key, kind: 'webhook' })).deliveries;
          return d?.state === state && d.attempts >= attempts ? d : null;
        }, 30_000);
      const listed = async () => (await s.rpc<{ webhooks: any[] }>('webhooks.list', {})).webhooks.find((w) => w.runId === runId);
      const first = await record('dead', 2);
      expect(first.attempts).toBe(2);
      expect(await listed()).toMatchObject({ status: 'dead', attempts: 2 });
      // A retried round has its maxAttempts (2) again, and both records count on. Before: webhooks.list said 2 here
      // (the outbox row's count was reset to 0 by the retry) where deliveries.get said 4.
      await s.rpc('deliveries.retry', { deliveryId: first.deliveryId });
      const second = await record('dead', 4);
      expect(second.attempts).toBe(4);
      expect(await listed()).toMatchObject({ status: 'dead', attempts: 4 });
      hook.status = 200;
      await s.rpc('deliveries.retry', { deliveryId: first.deliveryId });
      expect(await record('delivered', 5)).toMatchObject({ attempts: 5 });
      expect(await listed()).toMatchObject({ status: 'delivered', attempts: 5 });
    } finally {
      hook.status = 200;
    }
  });

  it('errors: unknown_delivery, not_retryable, invalid params, invalid_cursor', async () => {
    expect(await rpcError('deliveries.get', { deliveryId: 'dlv_nope' })).toMatchObject({ code: -32004, data: { code: 'unknown_delivery' } });
    expect(await rpcError('deliveries.retry', { deliveryId: 'dlv_nope' })).toMatchObject({ code: -32004, data: { code: 'unknown_delivery' } });
    const [any] = (await s.rpc<{ deliveries: any[] }>('deliveries.list', { state: 'answered', limit: 1 })).deliveries;
    expect(await rpcError('deliveries.retry', { deliveryId: any.deliveryId })).toMatchObject({ code: -32009, data: { code: 'not_retryable' } });
    expect(await rpcError('deliveries.get', {})).toMatchObject({ code: -32602 });
    expect(await rpcError('deliveries.list', { state: 'lost' })).toMatchObject({ code: -32602 });
    expect(await rpcError('deliveries.list', { limit: 0 })).toMatchObject({ code: -32602 });
    expect(await rpcError('deliveries.list', { cursor: 'garbage' })).toMatchObject({ code: -32602, data: { code: 'invalid_cursor' } });
    const page = await s.rpc<{ next_cursor: string }>('deliveries.list', { limit: 1 });
    expect(page.next_cursor).toEqual(expect.any(String));
    expect(await rpcError('deliveries.list', { limit: 1, kind: 'webhook', cursor: page.next_cursor })).toMatchObject({ code: -32602, data: { code: 'invalid_cursor' } });
    const sessions = await s.rpc<{ next_cursor: string }>('sessions.list', { limit: 1 });
    expect(await rpcError('deliveries.list', { cursor: sessions.next_cursor })).toMatchObject({ code: -32602, data: { code: 'invalid_cursor' } });
  });

  it('a send to a channel that is not configured is a channel_error, and its record ends failed (not left accepted)', async () => {
    expect(await rpcError('send', { channel: 'telegram', to: '42', message: 'hi' })).toMatchObject({ code: -32000, data: { code: 'channel_error' } });
    const [d] = (await s.rpc<{ deliveries: any[] }>('deliveries.list', { kind: 'channel', limit: 1 })).deliveries;
    expect(d).toMatchObject({ kind: 'channel', state: 'failed', error: { code: 'channel_error', message: expect.stringContaining('not configured') } });
  });

  it('lists newest first across pages without repeats', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const p = await s.rpc<{ deliveries: any[]; next_cursor: string | null }>('deliveries.list', { limit: 2, ...(cursor ? { cursor } : {}) });
      seen.push(...p.deliveries.map((d) => d.deliveryId));
      cursor = p.next_cursor ?? undefined;
    } while (cursor);
    const all = (await s.rpc<{ deliveries: any[] }>('deliveries.list', { limit: 200 })).deliveries;
    expect(seen).toEqual(all.map((d) => d.deliveryId));
    expect(new Set(seen).size).toBe(seen.length);
    const times = all.map((d) => d.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
  });
});

describe('the board and budgets', () => {
  it('a board item of a budgeted agent shows its tree spend against the cap', async () => {
    const b = await startTestServer({ config: { agents: [{ id: 'main', budget: { tokens: 1_000_000, usd: 5 } }, { id: 'researcher' }] } });
    try {
      const { runId } = await b.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:budgeted', message: '/reply spent' });
      await b.rpc('agent.wait', { runId });
      const item = (await b.rpc<any>('runs.board', {})).done.find((i: any) => i.runId === runId);
      expect(item.budget).toMatchObject({ rootRunId: runId, capTokens: 1_000_000, capUsd: 5, spentUsd: 0 });
      expect(item.budget.spentTokens).toBeGreaterThan(0);
      const other = await b.rpc<{ runId: string }>('agent', { sessionKey: 'agent:researcher:unbudgeted', message: '/reply x' });
      await b.rpc('agent.wait', { runId: other.runId });
      expect((await b.rpc<any>('runs.board', {})).done.find((i: any) => i.runId === other.runId).budget).toBeUndefined();
    } finally {
      await b.close();
    }
  });
});

describe('status', () => {
  it('counts every dead webhook, past the 1,000 rows it used to read to count them', async () => {
    const key = 'agent:main:dead-count';
    hook.status = 500;
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply x', webhook: { url: hook.url } });
    await s.rpc('agent.wait', { runId });
    const dead = await until(async () => (await s.rt.store.db.selectFrom('webhook_outbox').selectAll().where('run_id', '=', runId).where('status', '=', 'dead').executeTakeFirst()) ?? null, 30_000);
    const before = (await s.rpc<{ webhooksDead: number }>('status')).webhooksDead;
    const copies = Array.from({ length: 1000 }, (_, i) => ({ ...dead, id: `${dead.id}-copy-${i}` }));
    for (let i = 0; i < copies.length; i += 100) await s.rt.store.db.insertInto('webhook_outbox').values(copies.slice(i, i + 100)).execute();
    expect(before).toBeGreaterThanOrEqual(1);
    expect((await s.rpc<{ webhooksDead: number }>('status')).webhooksDead).toBe(before + 1000);
  });
});
