// The push retry sweep takes only the room's notifications (`push:<approvalId>:<endpoint>`): an A2A push is a delivery
// of kind `push` that the webhook outbox retries, and the sweep took it too, found no push in it and ended it `dead`
// `not_retryable` — even one its receiver had answered 2xx (probe G, stop 59). It takes an item's "resolved" push too.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { durableRetries } from './retry';
import type { DeliveryRow } from '../store/schema';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

it('sweeps the notifications it sent, never an outbox push', async () => {
  const store = s.rt.store;
  const outbox = await store.createPush({ to: { url: 'https://example.com/a2a-push' }, source: 'webhook_outbox:123' });
  const mine = await store.createPush({ to: { url: 'https://push.example.com/sub' }, source: 'push:appr_1:https://push.example.com/sub' });
  for (const id of [outbox, mine]) await store.markAttempt(id, { ok: false, error: { code: 'http_500', message: 'receiver answered 500' }, final: false });
  const seen: string[] = [];
  const retries = durableRetries(store, { retryBaseMs: 1, maxAttempts: 5, timeoutMs: 1000 }, (e) => {
    throw e;
  });
  retries.run(async (row: DeliveryRow) => {
    seen.push(row.id);
    return null;
  });
  try {
    await until(() => seen.includes(mine));
    await new Promise((r) => setTimeout(r, 100));
    expect([...new Set(seen)]).toEqual([mine]);
    const row = await store.db.selectFrom('deliveries').select(['state', 'attempts']).where('id', '=', outbox).executeTakeFirstOrThrow();
    expect({ state: row.state, attempts: Number(row.attempts) }).toEqual({ state: 'accepted', attempts: 1 });
  } finally {
    retries.stop();
  }
});

it('sweeps a resolved push (`push-resolved:`) as well, each form once', async () => {
  const store = s.rt.store;
  const item = await store.createPush({ to: { url: 'https://push.example.com/r' }, source: 'push:appr_2:https://push.example.com/r' });
  const resolved = await store.createPush({ to: { url: 'https://push.example.com/r' }, source: 'push-resolved:appr_2:https://push.example.com/r' });
  for (const id of [item, resolved]) await store.markAttempt(id, { ok: false, error: { code: 'http_500', message: 'receiver answered 500' }, final: false });
  const seen: string[] = [];
  const retries = durableRetries(store, { retryBaseMs: 1, maxAttempts: 5, timeoutMs: 1000 }, (e) => {
    throw e;
  });
  retries.run(async (row: DeliveryRow) => {
    if (row.id !== item && row.id !== resolved) return null;
    seen.push(row.id);
    await store.markAttempt(row.id, { ok: false, final: true, error: { code: 'test', message: 'seen by the sweep' } });
    return null;
  });
  try {
    await until(() => seen.includes(item) && seen.includes(resolved));
    await new Promise((r) => setTimeout(r, 100));
    expect(seen.sort()).toEqual([item, resolved].sort());
  } finally {
    retries.stop();
  }
});
