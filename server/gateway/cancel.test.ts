// agent.cancel over real HTTP: a running run is aborted at once, a queued one never runs, an ended one is not_cancelable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settledEvents, startTestServer, type TestServer, until } from '../testing/harness';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ config: { agents: [{ id: 'main' }, { id: 'auto', tools: { exec: 'auto' } }] } });
});
afterAll(async () => {
  await s?.close();
});

type Started = { runId: string; status: string };
const send = (sessionKey: string, message: string, extra: Record<string, unknown> = {}) => s.rpc<Started>('agent', { sessionKey, message, ...extra });
const wait = (runId: string) => s.rpc<{ status: string; response?: string; error?: string }>('agent.wait', { runId });
const call = (method: string, params: unknown) => s.rpcRaw({ jsonrpc: '2.0', id: 1, method, params });

describe('agent.cancel', () => {
  it('aborts a running model step at once; the run ends error/cancelled and the session takes new work', async () => {
    const r = await send('agent:main:c1', '/sleep 30000\n/reply never');
    const t0 = Date.now();
    expect((await call('agent.cancel', { runId: r.runId, reason: 'stop' })).body.result).toEqual({ status: 'ok' });
    expect(await wait(r.runId)).toMatchObject({ status: 'error', error: 'cancelled' });
    expect(Date.now() - t0).toBeLessThan(5000);
    const next = await send('agent:main:c1', 'again');
    expect(next.status).toBe('started');
    expect(await wait(next.runId)).toMatchObject({ status: 'ok', response: 'echo: again' });
  });

  it('kills a tool in flight', async () => {
    const r = await send('agent:auto:c2', '/tool exec {"command":"sleep 30"}');
    await new Promise((res) => setTimeout(res, 300));
    await call('agent.cancel', { runId: r.runId });
    expect(await wait(r.runId)).toMatchObject({ status: 'error', error: 'cancelled' });
  });

  it('a call waiting on its approval: the item says kind tool, and the cancel closes it as `cancel`, as every kind spells it', async () => {
    const r = await send('agent:main:c-approval', '/tool exec {"command":"echo hi"}');
    const item = await until(async () => (await s.rpc<{ approvals: Array<{ approvalId: string; kind: string }> }>('approvals.list', { sessionKey: 'agent:main:c-approval' })).approvals[0]);
    expect(item.kind).toBe('tool');
    await call('agent.cancel', { runId: r.runId });
    expect(await wait(r.runId)).toMatchObject({ status: 'error', error: 'cancelled' });
    const events = (await settledEvents(s.rt, { runId: r.runId, limit: 1000 })).filter((e) => e.stream === 'approval').map((e) => JSON.parse(e.data));
    expect(events).toEqual([
      expect.objectContaining({ phase: 'requested', approvalId: item.approvalId, kind: 'tool', tool: 'exec' }),
      { phase: 'resolved', approvalId: item.approvalId, decision: 'cancel', reason: 'run interrupted' },
    ]);
    expect(await s.rt.store.getApproval(item.approvalId)).toMatchObject({ status: 'cancelled', decision: 'cancel' });
  });

  it('a queued run never runs', async () => {
    const a = await send('agent:main:c3', '/sleep 500\n/reply first');
    const b = await send('agent:main:c3', '/reply second', { queueMode: 'followup' });
    expect(b.status).toBe('queued');
    expect((await call('agent.cancel', { runId: b.runId })).body.result).toEqual({ status: 'ok' });
    expect(await wait(b.runId)).toMatchObject({ status: 'error', error: 'cancelled' });
    expect(await wait(a.runId)).toMatchObject({ status: 'ok', response: 'first' });
    const h = await s.rpc<{ messages: Array<{ content: string }> }>('chat.history', { sessionKey: 'agent:main:c3' });
    expect(h.messages.map((m) => m.content)).not.toContain('/reply second');
  });

  it('an ended run is not_cancelable; an unknown one unknown_run; bad params invalid', async () => {
    const r = await send('agent:main:c4', 'hi');
    await wait(r.runId);
    expect((await call('agent.cancel', { runId: r.runId })).body.error).toMatchObject({ code: -32009, data: { code: 'not_cancelable' } });
    expect((await call('agent.cancel', { runId: 'run_nope' })).body.error).toMatchObject({ code: -32004, data: { code: 'unknown_run' } });
    expect((await call('agent.cancel', { runId: 5 })).body.error).toMatchObject({ code: -32602 });
  });
});
