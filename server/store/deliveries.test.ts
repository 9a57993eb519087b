// Delivery records (CONTRACT §9) on both dialects: every kind, every state change in the write it records, forward only, the list, the migration.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CrosstalkError } from '../errors';
import { openDatabase } from './db';
import { type DeliveryChange, getDeliveryRow, listDeliveries, reopenDead } from './deliveries';
import type { RunRow } from './schema';
import { Store } from './store';
import { webhookRow } from '../webhooks/deliver';
import { reopenWebhook } from './webhook-outbox';
import { tmpDataDir } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = () => `t_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;

const dialects: Array<[string, (dataDir: string, pgSchema: string) => Promise<Store>]> = [
  ['sqlite', async (dataDir) => new Store(await openDatabase({ dataDir }))],
  ['postgres', async (dataDir, pgSchema) => new Store(await openDatabase({ dataDir, databaseUrl: PG_URL, pgSchema }))],
];

const run = (id: string, key: string, status: string, origin?: Record<string, unknown>): RunRow => ({
  id, session_key: key, status, input: '[]', queue_mode: 'followup', response: null, error: null, created_at: new Date().toISOString(),
  started_at: null, ended_at: null, origin: origin ? JSON.stringify(origin) : null, webhook: null, last_seq: 0, merged_into: null, cancel_requested: null,
});

describe.each(dialects)('deliveries on %s', (name, open) => {
  let store: Store;
  const dataDir = tmpDataDir();
  const pgSchema = schema();
  const announced: DeliveryChange[] = [];
  const state = async (id: string) => (await getDeliveryRow(store.db, id))?.state;

  beforeAll(async () => {
    store = await open(dataDir, pgSchema);
    store.onDeliveries = (c) => announced.push(...c);
  });
  afterAll(async () => {
    if (name === 'postgres') await sql.raw(`drop schema if exists ${pgSchema} cascade`).execute(store.db);
    await store.close();
  });

  it('a session message: accepted, then running with the row its target got (one write), then answered with the run end', async () => {
    const from = 'agent:main:dl-a';
    const to = 'agent:researcher:dl-a';
    await store.ensureSession({ key: from, agentId: 'main', kind: 'other' });
    await store.ensureSession({ key: to, agentId: 'researcher', kind: 'other' });
    await store.createDeliveries([{ id: 'dlv_a', kind: 'session_message', from: { sessionKey: from, runId: 'run_caller', callId: 'call_1' }, to: { sessionKey: to }, runId: 'run_a' }]);
    expect(await state('dlv_a')).toBe('accepted');
    await store.insertRun(run('run_a', to, 'queued', { deliveryId: 'dlv_a' }));
    const msg = { sessionKey: to, role: 'user' as const, kind: 'inter_session' as const, content: 'hi', runId: 'run_a', author: { type: 'agent' as const, id: 'main' }, meta: { fromSessionKey: from, deliveryId: 'dlv_a' } };
    const started = await store.startRun('run_a', to, [msg]);
    expect(started).not.toBeNull();
    expect(await state('dlv_a')).toBe('running');
    // Both intermediate states are announced, in order (they become `delivery` events on both ends).
    expect(announced.filter((c) => c.row.id === 'dlv_a').flatMap((c) => c.states)).toEqual(['accepted', 'delivered', 'running']);
    await store.finishRun('run_a', { status: 'ok', response: 'done', ended_at: new Date().toISOString() }, [], [], { key: to, idle: true }, { deliveries: { answered: ['dlv_a'], failed: [], created: [] } });
    const row = (await getDeliveryRow(store.db, 'dlv_a'))!;
    expect(row).toMatchObject({ state: 'answered', from_session: from, from_call: 'call_1', to_session: to, run_id: 'run_a' });
  });

  it('a run start that does not happen (the run was cancelled first) moves nothing: the change is in the same write', async () => {
    const to = 'agent:researcher:dl-b';
    await store.ensureSession({ key: to, agentId: 'researcher', kind: 'other' });
    await store.createDeliveries([{ id: 'dlv_b', kind: 'session_message', from: { sessionKey: 'agent:main:dl-b' }, to: { sessionKey: to } }]);
    await store.insertRun(run('run_b', to, 'queued'));
    expect(await store.endQueued('run_b', 'cancelled')).toBe(true);
    const msg = { sessionKey: to, role: 'user' as const, kind: 'inter_session' as const, content: 'hi', runId: 'run_b', author: { type: 'agent' as const, id: 'main' }, meta: { deliveryId: 'dlv_b' } };
    expect(await store.startRun('run_b', to, [msg])).toBeNull();
    expect(await state('dlv_b')).toBe('accepted');
  });

  it('states move forward only: a late or repeated step, or a step out of an end, changes nothing', async () => {
    await store.createDeliveries([{ id: 'dlv_c', kind: 'delegate', from: { sessionKey: 'agent:main:dl-c' }, to: { sessionKey: 'agent:main:subagent:c' } }]);
    expect((await store.advanceDeliveries(['dlv_c'], 'running')).length).toBe(1);
    expect(await store.advanceDeliveries(['dlv_c'], 'delivered')).toEqual([]); // backwards
    expect(await store.advanceDeliveries(['dlv_c'], 'running')).toEqual([]); // repeated
    await store.advanceDeliveries(['dlv_c'], 'failed', { error: { code: 'internal', message: 'target run error: boom' } });
    expect(await store.advanceDeliveries(['dlv_c'], 'answered')).toEqual([]); // out of an end
    expect(await store.advanceDeliveries(['dlv_c'], 'dead')).toEqual([]);
    expect(await getDeliveryRow(store.db, 'dlv_c')).toMatchObject({ kind: 'delegate', state: 'failed', error_code: 'internal', error_message: 'target run error: boom' });
    // A second create under the same id (a re-driven call) keeps the first record as it is.
    expect(await store.createDeliveries([{ id: 'dlv_c', kind: 'delegate', to: { sessionKey: 'x' } }])).toEqual([]);
    expect(await state('dlv_c')).toBe('failed');
  });

  it('a run end that owes a callback creates its `callback` delivery in the same transaction; the caller row moves it on', async () => {
    const caller = 'agent:main:dl-d';
    const target = 'agent:researcher:dl-d';
    await store.ensureSession({ key: caller, agentId: 'main', kind: 'other' });
    await store.ensureSession({ key: target, agentId: 'researcher', kind: 'other' });
    await store.insertRun(run('run_d', target, 'running'));
    const cb = { id: 'cb_run_d', target_run_id: 'run_d', target_session_key: target, caller_session_key: caller, caller_run_id: null, response: '42', meta: null, status: 'pending', error: null, created_at: new Date().toISOString(), delivered_at: null };
    await store.finishRun('run_d', { status: 'ok', response: '42', ended_at: new Date().toISOString() }, [cb], [], { key: target, idle: true }, { deliveries: { answered: [], failed: [], created: [{ id: 'dlv_cb_run_d', kind: 'callback', from: { sessionKey: target, runId: 'run_d' }, to: { sessionKey: caller }, runId: 'run_cb_run_d' }] } });
    expect(await getDeliveryRow(store.db, 'dlv_cb_run_d')).toMatchObject({ kind: 'callback', state: 'accepted', from_session: target, to_session: caller });
    // The callback row in the caller's transcript (its turn starting) moves it to running; the turn's end answers it.
    await store.insertRun(run('run_cb_run_d', caller, 'queued', { deliveryId: 'dlv_cb_run_d' }));
    await store.startRun('run_cb_run_d', caller, [{ sessionKey: caller, role: 'user', kind: 'agent_callback_result', content: '42', runId: 'run_cb_run_d', author: { type: 'agent', id: 'researcher' }, meta: { deliveryId: 'dlv_cb_run_d' } }]);
    expect(await state('dlv_cb_run_d')).toBe('running');
    await store.finishRun('run_cb_run_d', { status: 'ok', response: 'ok', ended_at: new Date().toISOString() }, [], [], { key: caller, idle: true }, { deliveries: { answered: ['dlv_cb_run_d'], failed: [], created: [] } });
    expect(await state('dlv_cb_run_d')).toBe('answered');
    // A callback dropped (its caller gone) fails its delivery.
    await store.createDeliveries([{ id: 'dlv_cb_gone', kind: 'callback', to: { sessionKey: 'agent:main:gone' } }]);
    await store.settleCallback('cb_gone', 'dropped', { error: 'unknown_session' });
    expect(await getDeliveryRow(store.db, 'dlv_cb_gone')).toMatchObject({ state: 'failed', error_code: 'unknown_session' });
  });

  it('a channel send: its mirror row records the 2xx (delivered, one attempt counted, in the same write)', async () => {
    const key = 'agent:main:telegram:direct:dl-e';
    await store.ensureSession({ key, agentId: 'main', kind: 'channel' });
    await store.createDeliveries([{ id: 'dlv_e', kind: 'channel', from: { sessionKey: 'agent:main:main' }, to: { sessionKey: key, channel: 'telegram', target: '42' } }]);
    await store.markAttempt('dlv_e', { ok: false, final: false, error: { code: 'channel_error', message: 'HTTP 502' } });
    expect(await getDeliveryRow(store.db, 'dlv_e')).toMatchObject({ state: 'accepted', attempts: 1, error_message: 'HTTP 502' });
    await store.appendMessages([{ sessionKey: key, role: 'assistant', kind: 'mirror', content: 'hello', author: { type: 'agent', id: 'main' }, meta: { channel: 'telegram', deliveryId: 'dlv_e' } }]);
    expect(await getDeliveryRow(store.db, 'dlv_e')).toMatchObject({ state: 'delivered', attempts: 2, error_code: null });
  });

  it('webhooks: a delivery per outbox row in its transaction; attempts counted on the outbox write; dead after the last; retried under the same id', async () => {
    const key = 'agent:main:dl-f';
    await store.ensureSession({ key, agentId: 'main', kind: 'other' });
    await store.insertRun(run('run_f', key, 'running'));
    await store.finishRun('run_f', { status: 'ok', response: 'x', ended_at: new Date().toISOString() }, [], [webhookRow('run_f', { url: 'http://127.0.0.1:9/hook' }, { runId: 'run_f' }, 'run_f')], { key, idle: true });
    expect(await getDeliveryRow(store.db, 'dlv_wh_run_f')).toMatchObject({ kind: 'webhook', state: 'accepted', from_session: key, from_run: 'run_f', to_url: 'http://127.0.0.1:9/hook', source: 'webhook_outbox:wh_run_f' });
    // Each attempt is counted as it begins (its claim), on the row and the delivery alike; its outcome counts nothing.
    expect(await store.claimWebhookAttempt('wh_run_f', { final: false })).toBe(1);
    expect(await getDeliveryRow(store.db, 'dlv_wh_run_f')).toMatchObject({ state: 'accepted', attempts: 1 });
    await store.updateWebhook('wh_run_f', { last_error: 'receiver answered 500' });
    expect(await getDeliveryRow(store.db, 'dlv_wh_run_f')).toMatchObject({ state: 'accepted', attempts: 1, error_message: 'receiver answered 500' });
    expect(await store.claimWebhookAttempt('wh_run_f', { final: true, from: 0 })).toBeNull(); // stale: not claimed
    expect(await store.claimWebhookAttempt('wh_run_f', { final: true, from: 1 })).toBe(2);
    await store.updateWebhook('wh_run_f', { status: 'dead', last_error: 'receiver answered 500' });
    expect(await getDeliveryRow(store.db, 'dlv_wh_run_f')).toMatchObject({ state: 'dead', attempts: 2 });
    expect(await store.claimWebhookAttempt('wh_run_f', { final: false })).toBeNull(); // dead: nothing to attempt
    // Retry: back to accepted under the same id (only from dead), and a 2xx delivers it; attempts keep counting, on the row too.
    expect(await reopenDead(store.db, 'dlv_a')).toBeNull();
    expect((await reopenDead(store.db, 'dlv_wh_run_f'))?.row.state).toBe('accepted');
    await reopenWebhook(store.db, 'wh_run_f');
    expect(await store.claimWebhookAttempt('wh_run_f', { final: false })).toBe(3);
    await store.updateWebhook('wh_run_f', { status: 'delivered', delivered_at: new Date().toISOString(), last_error: null });
    expect(await getDeliveryRow(store.db, 'dlv_wh_run_f')).toMatchObject({ state: 'delivered', attempts: 3, error_code: null });
    expect(await store.db.selectFrom('webhook_outbox').select(['status', 'attempts']).where('id', '=', 'wh_run_f').executeTakeFirst()).toEqual({ status: 'delivered', attempts: 3 });
    // A row whose attempts ran out without a result (its process died): dead with its delivery.
    await store.db.transaction().execute((tx) => store.insertWebhooks(tx, [webhookRow('run_f', { url: 'http://127.0.0.1:9/b' }, {}, 'run_f_b')]));
    expect(await store.webhookDead('wh_run_f_b', 'attempts ran out')).toBe(true);
    expect(await state('dlv_wh_run_f_b')).toBe('dead');
  });

  it('pushes: createPush, attempts counted, dead after the final one', async () => {
    const id = await store.createPush({ id: 'dlv_push_1', from: { sessionKey: 'agent:main:dl-g' }, to: { url: 'https://push.example/abc' } });
    expect(id).toBe('dlv_push_1');
    await store.markAttempt(id, { ok: false, final: false, error: { code: 'channel_error', message: '503' } });
    await store.markAttempt(id, { ok: false, final: true, error: { code: 'channel_error', message: '503' } });
    expect(await getDeliveryRow(store.db, id)).toMatchObject({ kind: 'push', state: 'dead', attempts: 2, to_url: 'https://push.example/abc' });
    const ok = await store.createPush({ to: { url: 'https://push.example/def' } });
    await store.markAttempt(ok, { ok: true });
    expect(await getDeliveryRow(store.db, ok)).toMatchObject({ state: 'delivered', attempts: 1 });
  });

  it('lists newest first, by either end, state and kind, page by page with a cursor; a foreign cursor is invalid_cursor', async () => {
    const k = 'agent:main:dl-list';
    for (let i = 0; i < 5; i++) {
      await store.createDeliveries([{ id: `dlv_l${i}`, kind: i % 2 ? 'session_message' : 'delegate', from: i < 3 ? { sessionKey: k } : { sessionKey: 'agent:main:other' }, to: { sessionKey: i < 3 ? 'agent:writer:x' : k } }]);
      await new Promise((r) => setTimeout(r, 2));
    }
    const p1 = await listDeliveries(store.db, { sessionKey: k, limit: 2 });
    expect(p1.deliveries.map((d) => d.deliveryId)).toEqual(['dlv_l4', 'dlv_l3']);
    const p2 = await listDeliveries(store.db, { sessionKey: k, limit: 2, cursor: p1.next_cursor! });
    expect(p2.deliveries.map((d) => d.deliveryId)).toEqual(['dlv_l2', 'dlv_l1']);
    const p3 = await listDeliveries(store.db, { sessionKey: k, limit: 2, cursor: p2.next_cursor! });
    expect(p3.deliveries.map((d) => d.deliveryId)).toEqual(['dlv_l0']);
    expect(p3.next_cursor).toBeNull();
    expect((await listDeliveries(store.db, { sessionKey: k, kind: 'delegate', limit: 10 })).deliveries.map((d) => d.deliveryId)).toEqual(['dlv_l4', 'dlv_l2', 'dlv_l0']);
    expect((await listDeliveries(store.db, { state: 'dead', limit: 50 })).deliveries.every((d) => d.state === 'dead')).toBe(true);
    await expect(listDeliveries(store.db, { sessionKey: 'agent:main:else', limit: 2, cursor: p1.next_cursor! })).rejects.toMatchObject({ code: 'invalid_cursor' });
    await expect(listDeliveries(store.db, { limit: 2, cursor: 'nope' })).rejects.toBeInstanceOf(CrosstalkError);
    expect(p1.deliveries[0]).toEqual({ deliveryId: 'dlv_l4', kind: 'delegate', from: { sessionKey: 'agent:main:other' }, to: { sessionKey: k }, state: 'accepted', attempts: 0, createdAt: expect.any(String), updatedAt: expect.any(String) });
  });

  it('the migration gives callbacks and webhook rows stored before it their deliveries', async () => {
    await store.db.insertInto('callbacks').values({ id: 'cb_old', target_run_id: 'run_old', target_session_key: 'agent:researcher:old', caller_session_key: 'agent:main:old', caller_run_id: null, response: 'r', meta: null, status: 'pending', error: null, created_at: '2026-01-01T00:00:00.000Z', delivered_at: null }).execute();
    await store.db.insertInto('webhook_outbox').values({ ...webhookRow('run_old', { url: 'http://127.0.0.1:9/old' }, {}, 'old'), status: 'dead', attempts: 8, last_error: 'receiver answered 500' }).execute();
    await store.db.deleteFrom('deliveries').execute();
    await sql`drop table deliveries`.execute(store.db);
    await store.db.deleteFrom('crosstalk_migrations' as never).where('name' as never, '=', '0015_deliveries' as never).execute();
    await store.close();
    store = await open(dataDir, pgSchema);
    expect(await getDeliveryRow(store.db, 'dlv_cb_old')).toMatchObject({ kind: 'callback', state: 'accepted', from_session: 'agent:researcher:old', to_session: 'agent:main:old', run_id: 'run_cb_old' });
    expect(await getDeliveryRow(store.db, 'dlv_wh_old')).toMatchObject({ kind: 'webhook', state: 'dead', attempts: 8, error_message: 'receiver answered 500', source: 'webhook_outbox:wh_old' });
    expect(await getDeliveryRow(store.db, 'dlv_wh_run_f')).toMatchObject({ kind: 'webhook', state: 'delivered' });
  });
});
