// Tables that only grow get limits (issue 20 item 10): idempotency keys expire (a repeat after that is a new
// request), tool-start marks of ended runs go, pending pairing requests expire so strangers cannot block new pairings.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../channels/types';
import { createLogger } from '../logger';
import { startTestServer, type TestServer } from '../testing/harness';
import { admit, listPairings, MAX_PENDING_PER_CHANNEL, resolvePairing } from '../trust/pairing';
import { idempotencyTtlMs } from './idempotency';
import { sql } from 'kysely';
import { endedToolStarts, pairingTtlMs, sweepRetention } from './retention';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

const days = (n: number) => new Date(Date.now() - n * 24 * 3600_000).toISOString();
const age = (key: string, at: string) => s.rt.store.db.updateTable('idempotency').set({ created_at: at }).where('key', '=', key).execute();

describe('idempotency keys expire', () => {
  it('defaults to 7 days, configurable by CROSSTALK_IDEMPOTENCY_TTL_MS', () => {
    expect(idempotencyTtlMs({})).toBe(7 * 24 * 3600_000);
    expect(idempotencyTtlMs({ CROSSTALK_IDEMPOTENCY_TTL_MS: '60000' })).toBe(60_000);
    expect(pairingTtlMs({})).toBe(3600_000);
    expect(pairingTtlMs({ CROSSTALK_PAIRING_TTL_MS: '5000' })).toBe(5000);
  });

  it('agent: a key repeated within 7 days is the first answer; after 7 days it is a new request; the sweep deletes it', async () => {
    const params = { sessionKey: 'agent:main:ttl', message: '/reply hi', idempotencyKey: 'ttl-agent' };
    const first = await s.rpc<{ runId: string }>('agent', params);
    await s.rpc('agent.wait', { runId: first.runId });
    await age('agent:ttl-agent', days(6.9));
    expect(await s.rpc('agent', params)).toEqual(first);
    await age('agent:ttl-agent', days(7.1));
    const second = await s.rpc<{ runId: string; status: string }>('agent', params);
    expect(second.runId).not.toBe(first.runId);
    expect(await s.rpc('agent.wait', { runId: second.runId })).toMatchObject({ status: 'ok', response: 'hi' });
    expect(await s.rpc('agent', params)).toEqual(second); // the new request holds the key now

    await age('agent:ttl-agent', days(8));
    const swept = await sweepRetention(s.rt.store);
    expect(swept.idempotency).toBeGreaterThanOrEqual(1);
    expect(await s.rt.store.db.selectFrom('idempotency').select('key').where('key', '=', 'agent:ttl-agent').executeTakeFirst()).toBeUndefined();
  });

  it('send: a key repeated after 7 days sends again', async () => {
    const params = { channel: 'webchat', to: 'peer-ttl', message: 'once', idempotencyKey: 'ttl-send' };
    const first = await s.rpc<{ messageId: string }>('send', params);
    expect(await s.rpc('send', params)).toEqual(first);
    const sessionKey = (first as unknown as { sessionKey: string }).sessionKey;
    const count = async () => (await s.rpc<{ messages: any[] }>('chat.history', { sessionKey })).messages.filter((m) => m.content === 'once').length;
    expect(await count()).toBe(1);
    await age('send:ttl-send', days(7.1));
    await s.rpc('send', params);
    expect(await count()).toBe(2);
  });
});

describe('tool-start marks', () => {
  it('of ended runs are deleted by the sweep; a running run keeps its marks', async () => {
    const { store } = s.rt;
    const done = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:marks', message: '/tool send_message {"content":"posted"}' });
    expect((await s.rpc<{ status: string }>('agent.wait', { runId: done.runId })).status).toBe('ok');
    const marks = (runId: string) => store.db.selectFrom('tool_starts').select('call_id').where('run_id', '=', runId).execute();
    expect((await marks(done.runId)).length).toBe(1);
    const live = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:marks-live', message: '/sleep 30000\n/reply late' });
    expect(await store.markToolStarted(live.runId, 'call_live', 'agent:main:marks-live')).toBe(true);
    const swept = await sweepRetention(store);
    expect(swept.toolStarts).toBeGreaterThanOrEqual(1);
    expect(await marks(done.runId)).toEqual([]);
    expect((await marks(live.runId)).length).toBe(1);
    await s.rpc('agent.cancel', { runId: live.runId });
  });

  it('are found from the marks, each run looked up by its key: the sweep never lists every ended run', async () => {
    const { store } = s.rt;
    if (store.dialect !== 'sqlite') return; // PostgreSQL already planned it so (a nested loop from tool_starts)
    const q = endedToolStarts(store).compile();
    const plan = (await sql.raw<{ detail: string }>(`explain query plan ${q.sql}`.replace(/\?/g, () => "'x'")).execute(store.db)).rows.map((r) => r.detail);
    expect(plan.some((d) => /SCAN tool_starts/.test(d))).toBe(true);
    expect(plan.filter((d) => /SCAN runs|LIST SUBQUERY/.test(d))).toEqual([]);
  });
});

describe('pending pairing requests expire', () => {
  const log = createLogger();
  const rule = { policy: 'pairing' as const, allowFrom: new Set<string>() };
  const msg = (from: string, text = 'hello'): InboundMessage => ({ from, peer: { kind: 'direct', id: from }, text, replyTarget: { to: from } }) as InboundMessage;

  it(`${MAX_PENDING_PER_CHANNEL} strangers block new pairings only until their requests expire (1 hour)`, async () => {
    const { store } = s.rt;
    const channel = 'zalo';
    const now = new Date().toISOString();
    await store.db
      .insertInto('channel_senders')
      .values(Array.from({ length: MAX_PENDING_PER_CHANNEL }, (_, i) => ({ channel, peer: `stranger-${i}`, status: 'pending', code: `CODE${i}`, first_message: 'hi', requested_at: now, resolved_at: null })))
      .execute();
    expect(await admit(store, log, rule, channel, 'main', msg('newcomer'))).toEqual({ kind: 'drop', reason: 'too many pairing requests pending' });

    // An hour later the strangers' requests have expired: they are not listed, cannot be approved, and block no one.
    const old = new Date(Date.now() - 61 * 60_000).toISOString();
    await store.db.updateTable('channel_senders').set({ requested_at: old }).where('channel', '=', channel).execute();
    expect((await listPairings(store)).filter((p) => p.channel === channel)).toEqual([]);
    await expect(resolvePairing(store, { channel, code: 'CODE1', decision: 'approve' })).rejects.toMatchObject({ code: 'invalid_request' });
    const fresh = await admit(store, log, rule, channel, 'main', msg('newcomer'));
    expect(fresh).toMatchObject({ kind: 'held', firstRequest: true });
    expect((await listPairings(store)).filter((p) => p.channel === channel).map((p) => p.peer)).toEqual(['newcomer']);

    // A stranger whose request expired asks again: a new request, with a new code; their old held messages are gone.
    await store.db.insertInto('channel_held').values({ channel, peer: 'stranger-2', agent_id: 'main', message: JSON.stringify(msg('stranger-2', 'old')), created_at: old }).execute();
    const again = await admit(store, log, rule, channel, 'main', msg('stranger-2', 'new'));
    expect(again).toMatchObject({ kind: 'held', firstRequest: true });
    expect((again as { code: string }).code).not.toBe('CODE2');
    const held = await store.db.selectFrom('channel_held').select('message').where('channel', '=', channel).where('peer', '=', 'stranger-2').execute();
    expect(held.map((h) => JSON.parse(h.message).text)).toEqual(['new']);

    // The sweep deletes the rest of the expired requests.
    const swept = await sweepRetention(store);
    expect(swept.pairings).toBe(MAX_PENDING_PER_CHANNEL - 1);
    const left = await store.db.selectFrom('channel_senders').select('peer').where('channel', '=', channel).orderBy('peer').execute();
    expect(left.map((r) => r.peer)).toEqual(['newcomer', 'stranger-2']);
  });
});
