// Agents talk to agents (issue 3): sessions_send / agents_message, callback turns, failures and busy callers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, startTestServer, type TestServer, until } from '../testing/harness';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ config: { agents: [{ id: 'main' }, { id: 'researcher' }, { id: 'writer' }] } });
});
afterAll(async () => {
  await s?.close();
});

type Msg = { id: number; role: string; kind: string; content: string; runId?: string; author: any; meta?: any; tool?: any };
const history = async (sessionKey: string, includeTools = false) =>
  (await s.rpc<{ messages: Msg[] }>('chat.history', { sessionKey, limit: 200, includeTools })).messages.reverse();
const turn = async (sessionKey: string, message: string) => {
  const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey, message });
  return { runId, ...(await s.rpc<{ status: string; response: string }>('agent.wait', { runId })) };
};

describe('sessions_send async', () => {
  it('delivers an inter_session row, then a callback row with exactly the response, then a callback turn', async () => {
    // The target answers after the caller's run has ended (a callback that arrives earlier is steered into that
    // run by design: its own test is 'a callback to a busy caller in steer mode').
    const r = await turn('agent:main:main', '/tool sessions_send {"sessionKey":"agent:researcher:main","message":"/sleep 200\\n/reply 42","mode":"async"}');
    expect(r.status).toBe('ok');
    const accepted = JSON.parse(r.response.replace(/^sessions_send: /, ''));
    expect(accepted).toMatchObject({ status: 'accepted', runId: expect.stringMatching(/^run_/) });

    const target = await until(async () => {
      const h = await history('agent:researcher:main');
      return h.length >= 2 ? h : null;
    });
    expect(target[0]).toMatchObject({ role: 'user', kind: 'inter_session', content: '/sleep 200\n/reply 42', author: { type: 'agent', id: 'main' }, meta: { fromSessionKey: 'agent:main:main' } });
    expect(target[1]).toMatchObject({ role: 'assistant', kind: 'message', content: '42' });

    const main = await until(async () => {
      const h = await history('agent:main:main');
      return h.some((m) => m.content === 'echo: 42') ? h : null;
    });
    const cbIndex = main.findIndex((m) => m.kind === 'agent_callback_result');
    expect(main[cbIndex]).toMatchObject({ role: 'user', content: '42', author: { type: 'agent', id: 'researcher' }, meta: { fromSessionKey: 'agent:researcher:main', runId: accepted.runId } });
    expect(main[cbIndex + 1]).toMatchObject({ role: 'assistant', kind: 'message', content: 'echo: 42' });
    expect(main.filter((m) => m.kind === 'agent_callback_result').length).toBe(1);
  });

  it('sync returns {status:"ok", runId, response} to the tool', async () => {
    const r = await turn('agent:main:sync', '/tool sessions_send {"sessionKey":"agent:researcher:sync","message":"/reply 42"}');
    const out = JSON.parse(r.response.replace(/^sessions_send: /, ''));
    expect(out).toEqual({ status: 'ok', runId: expect.any(String), deliveryId: expect.stringMatching(/^dlv_/), response: '42' });
    expect(await s.rpc('deliveries.get', { deliveryId: out.deliveryId })).toMatchObject({ kind: 'session_message', state: 'answered', runId: out.runId, from: { sessionKey: 'agent:main:sync' }, to: { sessionKey: 'agent:researcher:sync' } });
    expect((await history('agent:main:sync')).some((m) => m.kind === 'agent_callback_result')).toBe(false);
  });

  it('sync times out with delivered:true and the message is still answered', async () => {
    const r = await turn('agent:main:sync-timeout', '/tool sessions_send {"sessionKey":"agent:researcher:slow","message":"/sleep 300\\n/reply late","timeoutSeconds":0.05}');
    const out = JSON.parse(r.response.replace(/^sessions_send: /, ''));
    expect(out).toEqual({ status: 'timeout', runId: expect.any(String), deliveryId: expect.stringMatching(/^dlv_/), delivered: true });
    await until(async () => (await history('agent:researcher:slow')).some((m) => m.content === 'late'));
    // The timed-out send's delivery goes on to `answered` when the target run ends (CONTRACT §9).
    await until(async () => (await s.rpc<{ state: string }>('deliveries.get', { deliveryId: out.deliveryId })).state === 'answered');
  });

  it('agents_message targets agent:<id>:main on the same mechanism', async () => {
    const r = await turn('agent:researcher:asker', '/tool agents_message {"agentId":"writer","message":"/reply drafted"}');
    expect(JSON.parse(r.response.replace(/^agents_message: /, ''))).toMatchObject({ status: 'ok', response: 'drafted' });
    expect((await history('agent:writer:main'))[0]).toMatchObject({ kind: 'inter_session', author: { id: 'researcher' } });
  });
});

describe('bad input', () => {
  const toolResult = async (sessionKey: string, line: string) => {
    const r = await turn(sessionKey, line);
    return JSON.parse(r.response.replace(/^\w+: /, ''));
  };
  it('unknown agent, own session, bad webhook URLs: clear error codes', async () => {
    expect(await toolResult('agent:main:bad1', '/tool sessions_send {"sessionKey":"agent:ghost:main","message":"x"}')).toMatchObject({ status: 'error', error: { code: 'unknown_agent' } });
    expect(await toolResult('agent:main:bad1', '/tool agents_message {"agentId":"ghost","message":"x"}')).toMatchObject({ status: 'error', error: { code: 'unknown_agent' } });
    expect(await toolResult('agent:main:bad1', '/tool sessions_send {"sessionKey":"agent:main:bad1","message":"x"}')).toMatchObject({ status: 'error', error: { code: 'invalid_request' } });
    expect(await toolResult('agent:main:bad1', '/tool sessions_send {"sessionKey":"agent:main:x","message":"x","webhook":{"url":"ftp://example.com/h"}}')).toMatchObject({ status: 'error', error: { code: 'invalid_request' } });
    const priv = await toolResult('agent:main:bad1', '/tool sessions_send {"sessionKey":"agent:main:x","message":"x","mode":"async","webhook":{"url":"http://127.0.0.1:9/h"}}');
    expect(priv).toMatchObject({ status: 'error', error: { code: 'invalid_request', message: expect.stringContaining('private') } });
    expect(await toolResult('agent:main:bad1', '/tool sessions_send {"sessionKey":"has space","message":"x"}')).toMatchObject({ status: 'error', error: { code: 'invalid_request' } });
    // the JSON-RPC agent method refuses a private webhook too
    const rpc = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'agent', params: { sessionKey: 'agent:main:x', message: 'x', webhook: { url: 'http://10.0.0.1/h' } } });
    expect(rpc.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request' } });
    // A URL is bounded (2,048 characters), as a push endpoint is.
    const long = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'agent', params: { sessionKey: 'agent:main:x', message: 'x', webhook: { url: `https://example.com/${'a'.repeat(3000)}` } } });
    expect(long.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request', issues: [expect.objectContaining({ path: 'webhook.url' })] } });
  });

  it('a failed target run gives no callback, and the failure is emitted to the caller', async () => {
    const sub = s.rt.bus.subscribe({ sessionKey: 'agent:main:failcb' });
    await turn('agent:main:failcb', '/tool sessions_send {"sessionKey":"agent:researcher:failing","message":"/fail nope","mode":"async"}');
    let ev: any;
    for (;;) {
      ev = await sub.next();
      if (ev?.stream === 'error') break;
    }
    sub.close();
    // A §6 code (CONTRACT §4 `error`), with what happened beside it.
    expect(ev.data).toMatchObject({ code: 'internal', reason: 'target_run_failed', targetSessionKey: 'agent:researcher:failing', error: 'nope' });
    await new Promise((r) => setTimeout(r, 100));
    expect((await history('agent:main:failcb')).some((m) => m.kind === 'agent_callback_result')).toBe(false);
  });

  it('a sync send whose target run is cancelled answers interrupted; a failed model, internal', async () => {
    const target = 'agent:researcher:cancelled-target';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:sync-cancel', message: `/tool sessions_send {"sessionKey":"${target}","message":"/sleep 10000"}` });
    const running = await until(async () => (await s.rt.store.db.selectFrom('runs').select('id').where('session_key', '=', target).where('status', '=', 'running').executeTakeFirst())?.id);
    await s.rpc('agent.cancel', { runId: running });
    const w = await s.rpc<{ status: string; response: string }>('agent.wait', { runId, timeoutMs: 10_000 });
    expect(JSON.parse(w.response.replace(/^\w+: /, ''))).toMatchObject({ status: 'error', runId: running, error: { code: 'interrupted', message: 'target run failed: cancelled' } });
    const failed = await turn('agent:main:sync-fail', '/tool sessions_send {"sessionKey":"agent:researcher:sync-failing","message":"/fail nope"}');
    expect(JSON.parse(failed.response.replace(/^\w+: /, ''))).toMatchObject({ status: 'error', error: { code: 'internal', message: 'target run failed: nope' } });
  });

  it('a sync send stops waiting when its caller is cancelled; the target run goes on and its delivery is answered', async () => {
    const target = 'agent:researcher:outlives-caller';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:sync-caller-cancel', message: `/tool sessions_send {"sessionKey":"${target}","message":"/sleep 3000\\n/reply late"}` });
    const running = await until(async () => (await s.rt.store.db.selectFrom('runs').select('id').where('session_key', '=', target).where('status', '=', 'running').executeTakeFirst())?.id);
    await s.rpc('agent.cancel', { runId });
    expect(await s.rpc('agent.wait', { runId, timeoutMs: 10_000 })).toMatchObject({ status: 'error', error: 'cancelled' });
    // Ended at once: the target is still on its sleep, and the caller's call is answered `interrupted`.
    expect((await s.rt.store.getRun(running))?.status).toBe('running');
    const result = (await history('agent:main:sync-caller-cancel', true)).find((m) => m.kind === 'tool_result');
    expect(result?.tool.result).toMatchObject({ status: 'error', runId: running, error: { code: 'interrupted' } });
    expect(await s.rpc('agent.wait', { runId: running, timeoutMs: 10_000 })).toMatchObject({ status: 'ok', response: 'late' });
    // Nothing of the caller is written after its end.
    expect((await history('agent:main:sync-caller-cancel', true)).filter((m) => m.kind === 'tool_result')).toHaveLength(1);
    const d = await until(async () => (await s.rpc<{ state: string }>('deliveries.get', { deliveryId: result!.tool.result.deliveryId })).state === 'answered' || undefined);
    expect(d).toBe(true);
  });

  it('a callback whose caller session was deleted meanwhile is dropped cleanly', async () => {
    // The premise: the caller is deleted before its target answers. Under load the caller's own turn can outlast the
    // target's sleep; its callback is then delivered to a caller that still exists (by design), so that attempt says
    // nothing and a fresh pair is tried. A callback delivered to a deleted caller fails every attempt.
    let cb: any;
    for (let attempt = 0; attempt < 3; attempt++) {
      const caller = `agent:main:gone${attempt}`;
      await turn(caller, `/tool sessions_send {"sessionKey":"agent:researcher:for-gone${attempt}","message":"/sleep ${1000 * (attempt + 1)}\\n/reply late","mode":"async"}`);
      await s.rpc('sessions.delete', { sessionKey: caller, deleteTranscript: true });
      cb = await until(async () => s.rt.store.db.selectFrom('callbacks').selectAll().where('caller_session_key', '=', caller).where('status', '!=', 'pending').executeTakeFirst());
      expect(await s.rt.store.getSession(caller)).toBeUndefined();
      if (cb.status === 'dropped') break;
    }
    expect(cb).toMatchObject({ status: 'dropped', error: 'unknown_session' });
    expect((await turn('agent:main:main', 'still fine')).response).toBe('echo: still fine');
  });
});

describe('busy callers', () => {
  it('a callback to a busy caller in reject mode is queued as a follow-up, never refused', async () => {
    const key = 'agent:main:busy-caller';
    await turn(key, 'create');
    await s.rpc('sessions.patch', { sessionKey: key, queueMode: 'reject' });
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/tool sessions_send {"sessionKey":"agent:researcher:quick","message":"/reply quick","mode":"async"}\n/sleep 300' });
    await s.rpc('agent.wait', { runId });
    const h = await until(async () => {
      const x = await history(key);
      return x.some((m) => m.content === 'echo: quick') ? x : null;
    });
    const cb = h.find((m) => m.kind === 'agent_callback_result')!;
    expect(cb.content).toBe('quick');
    expect(cb.runId).not.toBe(runId); // its own follow-up turn
  });

  it('callbacks to a busy caller in collect mode keep their own rows and deliveries; a message queued after them is not folded into one', async () => {
    const key = 'agent:main:collect-caller';
    await turn(key, 'create');
    await s.rpc('sessions.patch', { sessionKey: key, queueMode: 'collect' });
    const sends = await turn(
      key,
      '/tool sessions_send {"sessionKey":"agent:researcher:c1","message":"/sleep 200\\n/reply one","mode":"async"}\n/tool agents_message {"agentId":"writer","message":"/sleep 300\\n/reply two","mode":"async"}',
    );
    const ids = sends.response.split('\n').map((l) => JSON.parse(l.replace(/^\w+: /, '')).deliveryId as string);
    // Busy while both callbacks arrive; a plain message comes in after them.
    const long = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/sleep 900\n/reply long' });
    await until(async () => (await Promise.all(ids.map((deliveryId) => s.rpc<{ state: string }>('deliveries.get', { deliveryId })))).every((d) => d.state === 'delivered' || d.state === 'running'));
    await until(async () => (await s.rpc<{ deliveries: Array<{ kind: string }> }>('deliveries.list', { sessionKey: key, kind: 'callback' })).deliveries.length === 2);
    const user = await s.rpc<{ runId: string; status: string }>('agent', { sessionKey: key, message: 'user two' });
    expect(user.status).toBe('queued');
    await s.rpc('agent.wait', { runId: long.runId });
    await s.rpc('agent.wait', { runId: user.runId });
    const h = await until(async () => {
      const x = await history(key);
      return x.filter((m) => m.kind === 'agent_callback_result').length === 2 && x.some((m) => m.content === 'echo: user two') ? x : null;
    }).catch(async () => history(key));
    // Before: one row "one\n\ntwo" credited to researcher, the user's text folded into a callback row, and the
    // second callback's deliveries left at accepted / running for good.
    expect(h.filter((m) => m.kind === 'agent_callback_result').map((m) => [m.content, m.author.id])).toEqual([
      ['one', 'researcher'],
      ['two', 'writer'],
    ]);
    expect(h.find((m) => m.content === 'user two')).toMatchObject({ role: 'user', kind: 'message', author: { type: 'user' } });
    const all = await until(async () => {
      const d = (await s.rpc<{ deliveries: Array<{ kind: string; state: string }> }>('deliveries.list', { sessionKey: key })).deliveries;
      return d.every((x) => x.state === 'answered') ? d : null;
    }).catch(async () => (await s.rpc<{ deliveries: Array<{ kind: string; state: string }> }>('deliveries.list', { sessionKey: key })).deliveries);
    expect(all.map((d) => `${d.kind}:${d.state}`).sort()).toEqual(['callback:answered', 'callback:answered', 'session_message:answered', 'session_message:answered']);
  });

  it('a send refused by a busy target in reject mode answers agent_busy with its delivery id, and the delivery ends failed', async () => {
    const target = 'agent:researcher:busy-target';
    await turn(target, 'create');
    await s.rpc('sessions.patch', { sessionKey: target, queueMode: 'reject' });
    const busy = await s.rpc<{ runId: string }>('agent', { sessionKey: target, message: '/sleep 400' });
    const r = await turn('agent:main:refused-sender', `/tool sessions_send {"sessionKey":"${target}","message":"hi"}`);
    const result = JSON.parse(r.response.replace(/^sessions_send: /, ''));
    expect(result).toMatchObject({ status: 'error', error: { code: 'agent_busy' }, deliveryId: expect.stringMatching(/^dlv_/) });
    expect(await s.rpc('deliveries.get', { deliveryId: result.deliveryId })).toMatchObject({ state: 'failed', error: { code: 'agent_busy' } });
    await s.rpc('agent.wait', { runId: busy.runId });
  });

  it('a callback to a busy caller in steer mode is injected at the next model boundary', async () => {
    const key = 'agent:main:steer-caller';
    const { runId } = await s.rpc<{ runId: string }>('agent', {
      sessionKey: key,
      message: '/tool sessions_send {"sessionKey":"agent:researcher:fast","message":"/reply fast","mode":"async"}\n/tool exec {"command":"sleep 0.3"}',
    });
    // exec waits for approval while the callback arrives; approve after it has been steered in.
    const approval = await until(async () => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals[0]);
    // The callback waits in the run's inbox (a queued row aimed at the active run) until the tool finishes.
    await until(() => s.rt.store.db.selectFrom('runs').select('id').where('session_key', '=', key).where('status', '=', 'queued').where('origin', 'like', '%steerInto%').executeTakeFirst());
    await s.rpc('approvals.resolve', { approvalId: approval.approvalId, decision: 'allow_once' });
    const w = await s.rpc<{ response: string }>('agent.wait', { runId });
    expect(w.response).toBe('echo: fast');
    const h = await history(key);
    expect(h.find((m) => m.kind === 'agent_callback_result')).toMatchObject({ content: 'fast', runId });
  });
});

describe('many agents at once', () => {
  it('100 agents message each other concurrently: every message accounted for, none twice', async () => {
    const n = 100;
    const agents = Array.from({ length: n }, (_, i) => ({ id: `a${i}` }));
    // followup: each message gets a turn of its own, so every callback carries the answer to its own message
    // (under `steer`, messages that meet in one run share that run's final response, as the contract says).
    const t = await startTestServer({ config: { agents, session: { queueMode: 'followup' } } });
    try {
      const starts = await Promise.all(
        agents.map((a, i) =>
          t.rpc<{ runId: string }>('agent', {
            sessionKey: `agent:${a.id}:main`,
            message: `/tool agents_message {"agentId":"a${(i + 1) % n}","message":"/reply from ${a.id}","mode":"async"}\n/tool agents_message {"agentId":"a${(i + 7) % n}","message":"/reply also ${a.id}","mode":"async"}`,
          }),
        ),
      );
      for (const st of starts) await t.rpc('agent.wait', { runId: st.runId });
      const settled = async () => {
        const pending = await t.rt.store.db.selectFrom('runs').select('id').where('status', 'in', ['queued', 'running', 'waiting_approval']).execute();
        const cbs = await t.rt.store.db.selectFrom('callbacks').select('id').where('status', '=', 'pending').execute();
        return pending.length === 0 && cbs.length === 0;
      };
      await until(settled, 90_000); // 500 runs: a bound for a loaded 2-core machine, not a speed target
      for (let i = 0; i < n; i++) {
        const rows = (await t.rpc<{ messages: Msg[] }>('chat.history', { sessionKey: `agent:a${i}:main`, limit: 200 })).messages;
        const inter = rows.filter((m) => m.kind === 'inter_session').map((m) => m.content).sort();
        expect(inter).toEqual([`/reply also a${(i - 7 + n) % n}`, `/reply from a${(i - 1 + n) % n}`].sort());
        const cbs = rows.filter((m) => m.kind === 'agent_callback_result').map((m) => m.content).sort();
        expect(cbs).toEqual([`also a${i}`, `from a${i}`]);
      }
      const delivered = await t.rt.store.db.selectFrom('callbacks').select(['status']).execute();
      expect(delivered.length).toBe(2 * n);
      expect(delivered.every((c) => c.status === 'delivered')).toBe(true);
    } finally {
      await t.close();
    }
  }, 150_000);
});

describe('events', () => {
  it('the callback row is emitted as a message event on the caller session', async () => {
    const key = 'agent:main:cb-events';
    const reading = readSse(`${s.url}/api/gateway/events?sessionKey=${key}`, { until: (evs) => evs.some((e) => e.stream === 'message' && e.data.message.kind === 'agent_callback_result') });
    await new Promise((r) => setTimeout(r, 30));
    await turn(key, '/tool sessions_send {"sessionKey":"agent:writer:cb","message":"/reply done","mode":"async"}');
    const evs = await reading;
    expect(evs.at(-1).data.message).toMatchObject({ kind: 'agent_callback_result', content: 'done' });
  });
});
