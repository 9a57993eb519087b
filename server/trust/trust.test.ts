// Trust follows the run (CONTRACT §5): channel senders get `channelTools`, every run they start inherits it; dmPolicy pairing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKES } from '../channels/testing/fake-apis';
import { startFakePlatform, type FakePlatform } from '../channels/testing/fake-platform';
import { readSse, startTestServer, type TestServer, until } from '../testing/harness';
import { signWebhook } from '../webhooks/signature';

const SECRET = 'trust-hook-secret';
let hook: FakePlatform;

beforeAll(async () => {
  hook = await startFakePlatform(FAKES.webhook!.handler);
});
afterAll(async () => {
  await hook?.close();
});

const webhookChannel = (extra: Record<string, unknown> = {}) => ({ webhook: { url: `${hook.url}/out`, secret: SECRET, ...extra } });

let n = 0;
/** A signed inbound webhook-channel message over real HTTP (the node:http server routes /api/channels/*). */
async function inbound(s: TestServer, from: string, text: string, messageId = `m${++n}-${Date.now()}`) {
  const body = JSON.stringify({ from, text, messageId });
  const res = await fetch(`${s.url}/api/channels/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signWebhook(SECRET, body) },
    body,
  });
  return { status: res.status, body: await res.json() };
}

const sentTo = (peer: string) => hook.calls(/^\/out$/).filter((c) => c.body.to === `user:${peer}`).map((c) => String(c.body.text));
const runsOf = async (s: TestServer, key: string) =>
  (await s.rt.store.db.selectFrom('runs').select(['id', 'status', 'origin']).where('session_key', '=', key).orderBy('created_at').execute());
const pendingIn = async (s: TestServer, key: string) => (await s.rt.gateway.approvalsList({ sessionKey: key })).approvals;

describe('channel trust', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      config: {
        agents: [
          { id: 'main', channelTools: { sessions_list: 'auto', agents_message: 'auto', delegate_agent: 'auto', sessions_send: 'auto' } },
          { id: 'researcher' },
          { id: 'writer' },
        ],
        channels: webhookChannel({ dmPolicy: 'open' }),
      },
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  it("a channel sender's sessions_history waits for approval (it ran at once before) and the card says where the trust came from", async () => {
    await s.rpc('agent', { sessionKey: 'agent:main:main', message: '/reply operator-secret-42' });
    const key = 'agent:main:webhook:direct:mallory';
    const events = readSse(`${s.url}/api/gateway/events?sessionKey=${encodeURIComponent(key)}`, { until: (evs) => evs.some((e) => e.stream === 'approval') });
    await new Promise((r) => setTimeout(r, 50)); // the stream is subscribed before its headers; give the request a moment to land
    expect((await inbound(s, 'mallory', '/tool sessions_history {"sessionKey":"agent:main:main"}')).status).toBe(200);
    const [approval] = await until(async () => {
      const p = await pendingIn(s, key);
      return p.length ? p : null;
    });
    expect(approval!.tool).toBe('sessions_history');
    expect(approval!.trust).toEqual({ kind: 'channel', channel: 'webhook', peer: 'mallory' });
    const requested = (await events).find((e) => e.stream === 'approval');
    expect(requested.data).toMatchObject({ phase: 'requested', tool: 'sessions_history', trust: { kind: 'channel', channel: 'webhook', peer: 'mallory' } });
    // JSON-RPC approvals.list keeps exactly the CONTRACT §3 shape.
    const listed = await s.rpc<{ approvals: Array<Record<string, unknown>> }>('approvals.list', { sessionKey: key });
    expect(Object.keys(listed.approvals[0]!).sort()).toEqual(['approvalId', 'args', 'kind', 'parentChain', 'requestedAt', 'runId', 'sessionKey', 'tool']);

    await s.rpc('approvals.resolve', { approvalId: approval!.approvalId, decision: 'deny' });
    await s.rt.orchestrator.wait(approval!.runId, 10_000);
    await s.rt.channels.idle();
    await until(() => sentTo('mallory').length > 0);
    expect(sentTo('mallory').join('\n')).toContain('denied');
    expect(sentTo('mallory').join('\n')).not.toContain('operator-secret-42');
  });

  it('send_message is auto for channel senders, channelTools can open more, the rest asks', async () => {
    const key = 'agent:main:webhook:direct:sam';
    await inbound(s, 'sam', '/tool send_message {"content":"hi sam"}\n/tool sessions_list {}\n/tool exec {"command":"echo no"}');
    const pending = await until(async () => {
      const p = await pendingIn(s, key);
      return p.length ? p : null;
    });
    // Only exec waits: send_message (default auto) and sessions_list (channelTools auto) ran.
    expect(pending.map((p) => p.tool)).toEqual(['exec']);
    await s.rpc('approvals.resolve', { approvalId: pending[0]!.approvalId, decision: 'deny' });
    const w = await s.rt.orchestrator.wait(pending[0]!.runId, 10_000);
    expect(w.response).toContain('send_message: {"messageId"');
    expect(w.response).toContain('sessions_list: {"sessions"');
  });

  it('an allow_always from a channel sender opens the tool to that sender only; the operator\'s opens it to the operator only', async () => {
    const key = 'agent:main:webhook:direct:tess';
    const waitRun = (runId: string) => s.rpc<{ status: string; response?: string }>('agent.wait', { runId, timeoutMs: 10_000 });
    const pendingFor = (runId: string) => until(async () => (await pendingIn(s, key)).find((p) => p.runId === runId));
    await inbound(s, 'tess', '/tool exec {"command":"echo one"}');
    const [first] = await until(async () => {
      const p = await pendingIn(s, key);
      return p.length ? p : null;
    });
    await s.rpc('approvals.resolve', { approvalId: first!.approvalId, decision: 'allow_always' });
    await s.rt.orchestrator.wait(first!.runId, 10_000);
    // The rule holds for tess's next run in this session: it runs without asking.
    await inbound(s, 'tess', '/tool exec {"command":"echo two"}');
    const second = await until(async () => (await runsOf(s, key))[1]);
    expect(await waitRun(second.id)).toMatchObject({ status: 'ok', response: expect.stringContaining('two') });

    // The operator, in the same session, is still asked: tess's rule is not the operator's.
    const op = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/tool exec {"command":"echo operator"}' });
    const opAsk = await pendingFor(op.runId);
    expect(opAsk.trust).toEqual({ kind: 'operator' });
    await s.rpc('approvals.resolve', { approvalId: opAsk.approvalId, decision: 'allow_always' });
    expect(await waitRun(op.runId)).toMatchObject({ status: 'ok', response: expect.stringContaining('operator') });
    const op2 = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/tool exec {"command":"echo operator again"}' });
    expect(await waitRun(op2.runId)).toMatchObject({ status: 'ok', response: expect.stringContaining('operator again') });

    // The reverse: another channel sender's call in this session (through sessions_send) is asked, despite both rules.
    const inner = JSON.stringify('/tool exec {"command":"echo friend"}');
    await inbound(s, 'tess-friend', `/tool sessions_send {"sessionKey":"${key}","message":${inner},"mode":"async"}`);
    const friendAsk = await until(async () => (await pendingIn(s, key)).find((p) => p.trust?.kind === 'channel' && p.trust.peer === 'tess-friend'));
    expect(friendAsk.tool).toBe('exec');
    await s.rpc('approvals.resolve', { approvalId: friendAsk.approvalId, decision: 'deny' });
    await s.rt.orchestrator.wait(friendAsk.runId, 10_000);
  });

  it('every run a channel run starts inherits its trust: agents_message, sessions_send, delegate_agent and the callback turn', async () => {
    const key = 'agent:main:webhook:direct:mallory2';
    const inner = JSON.stringify('/tool sessions_history {"sessionKey":"agent:main:main"}');
    await inbound(s, 'mallory2', `/tool agents_message {"agentId":"researcher","message":${inner},"mode":"async"}`);
    const channelTrust = { kind: 'channel', channel: 'webhook', peer: 'mallory2' };
    const [viaMessage] = await until(async () => {
      const p = await pendingIn(s, 'agent:researcher:main');
      return p.length ? p : null;
    });
    expect(viaMessage!.trust).toEqual(channelTrust);
    await s.rpc('approvals.resolve', { approvalId: viaMessage!.approvalId, decision: 'allow_once' });
    // The callback turn back in the channel session carries the same trust.
    const callbackRun = await until(async () => (await runsOf(s, key)).find((r) => r.id.startsWith('run_cb_')));
    expect(JSON.parse(callbackRun.origin!).trust).toEqual(channelTrust);

    const execPrompt = JSON.stringify('/tool exec {"command":"echo from delegate"}');
    await inbound(s, 'mallory2', `/tool delegate_agent {"agent_id":"writer","prompt":${execPrompt},"mode":"detached"}`);
    const viaDelegate = await until(async () => (await s.rt.gateway.approvalsList({})).approvals.find((a) => a.sessionKey.startsWith('agent:writer:subagent:')));
    expect(viaDelegate.trust).toEqual(channelTrust);
    await s.rpc('approvals.resolve', { approvalId: viaDelegate.approvalId, decision: 'deny' });
    // The delegate's end brings a callback turn into the channel session: the next message waits until it has ended,
    // else it could be steered into that turn (the scripted model would not run its /tool line) rather than run alone.
    await until(async () => {
      const runs = await runsOf(s, key);
      return runs.filter((x) => x.id.startsWith('run_cb_')).length >= 2 && runs.every((x) => !['queued', 'running', 'waiting_approval'].includes(x.status));
    });

    await inbound(s, 'mallory2', `/tool sessions_send {"sessionKey":"agent:writer:main","message":${execPrompt},"mode":"async"}`);
    const viaSend = await until(async () => (await pendingIn(s, 'agent:writer:main'))[0]);
    expect(viaSend.trust).toEqual(channelTrust);
    await s.rpc('approvals.resolve', { approvalId: viaSend.approvalId, decision: 'deny' });

    // The operator's own call of the same tool runs under `tools` (sessions_history is auto there).
    const r = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:researcher:main', message: '/tool sessions_history {"sessionKey":"agent:main:main"}' });
    const w = await s.rpc<{ status: string; response: string }>('agent.wait', { runId: r.runId });
    expect(w.response).toContain('operator-secret-42');
  });

  it("a channel sender's message is not steered into a run of the operator's", async () => {
    const r = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:writer:main', message: '/sleep 400\n/reply operator turn' });
    const inner = JSON.stringify('channel words');
    await inbound(s, 'sid', `/tool sessions_send {"sessionKey":"agent:writer:main","message":${inner},"mode":"async"}`);
    const sent = await until(async () => (await runsOf(s, 'agent:writer:main')).find((x) => x.origin?.includes('"peer":"sid"')));
    expect(await s.rpc('agent.wait', { runId: r.runId })).toMatchObject({ status: 'ok', response: 'operator turn' });
    // It ran as its own run after the operator's (its own trust), not merged into it: it ended ok with its own answer.
    expect(await s.rpc('agent.wait', { runId: sent.id, timeoutMs: 10_000 })).toMatchObject({ status: 'ok', response: 'echo: channel words' });
    const after = (await runsOf(s, 'agent:writer:main')).find((x) => x.id === sent.id)!;
    expect(after.status).toBe('ok');
  });
});

describe('dmPolicy', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ config: { channels: webhookChannel() } }); // dmPolicy defaults to pairing
  });
  afterAll(async () => {
    await s?.close();
  });

  it('pairing: an unknown sender is held and gets one code; approve runs the held messages in order; a second resolve is already_resolved', async () => {
    const key = 'agent:main:webhook:direct:bob';
    await inbound(s, 'bob', 'first from bob');
    await inbound(s, 'bob', 'second from bob');
    expect(await runsOf(s, key)).toEqual([]);
    await until(() => sentTo('bob').length === 1);
    const code = /pairing code is ([A-Z0-9]+)/.exec(sentTo('bob')[0]!)![1]!;
    const listed = await s.rpc<{ pairings: Array<Record<string, unknown>> }>('pairings.list', {});
    expect(listed.pairings).toEqual([{ channel: 'webhook', peer: 'bob', code, firstMessage: 'first from bob', requestedAt: expect.any(String) }]);

    expect(await s.rpc('pairings.resolve', { channel: 'webhook', code, decision: 'approve' })).toEqual({ status: 'ok' });
    const runs = await until(async () => {
      const r = await runsOf(s, key);
      return r.length === 2 ? r : null;
    });
    for (const r of runs) await s.rt.orchestrator.wait(r.id, 10_000);
    const history = await s.rpc<{ messages: Array<{ role: string; content: string }> }>('chat.history', { sessionKey: key });
    expect(history.messages.filter((m) => m.role === 'user').map((m) => m.content).reverse()).toEqual(['first from bob', 'second from bob']);
    expect((await s.rpc<{ pairings: unknown[] }>('pairings.list', {})).pairings).toEqual([]);

    // Approved: the next message runs at once.
    await inbound(s, 'bob', 'third from bob');
    await until(async () => (await runsOf(s, key)).length === 3);
    const again = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'pairings.resolve', params: { channel: 'webhook', code, decision: 'deny' } });
    expect(again.body.error).toMatchObject({ code: -32009, data: { code: 'already_resolved' } });
  });

  it('pairing: a code whose first send failed is sent again with the next message, until one gets through', async () => {
    // The first send to this sender is refused (not retried): the sender never gets the code.
    let refuse = true;
    hook.setHandler((r) => {
      if (refuse && r.body?.to === 'user:quill') {
        refuse = false;
        return { status: 400 };
      }
      return FAKES.webhook!.handler(r);
    });
    await inbound(s, 'quill', 'first from quill');
    expect(sentTo('quill')).toHaveLength(1); // the refused attempt
    await inbound(s, 'quill', 'second from quill');
    // Before: nothing more was sent; the sender never learnt the code (pairings.list only).
    await until(() => sentTo('quill').length === 2);
    await inbound(s, 'quill', 'third from quill');
    await new Promise((r) => setTimeout(r, 200));
    expect(sentTo('quill')).toHaveLength(2); // told once it got through: not again
    const code = (await s.rpc<{ pairings: Array<{ peer: string; code: string }> }>('pairings.list', {})).pairings.find((p) => p.peer === 'quill')!.code;
    expect(sentTo('quill')[1]).toContain(code);
    hook.setHandler(FAKES.webhook!.handler);
  });

  it('pairing: deny drops the held messages and later ones; unknown codes and channels are refused', async () => {
    await inbound(s, 'carol', 'let me in');
    await until(() => sentTo('carol').length === 1);
    const code = /pairing code is ([A-Z0-9]+)/.exec(sentTo('carol')[0]!)![1]!;
    await s.rpc('pairings.resolve', { channel: 'webhook', code: code.toLowerCase(), decision: 'deny' });
    await inbound(s, 'carol', 'please');
    expect(await runsOf(s, 'agent:main:webhook:direct:carol')).toEqual([]);
    expect(sentTo('carol')).toHaveLength(1);
    const held = await s.rt.store.db.selectFrom('channel_held').selectAll().where('peer', '=', 'carol').execute();
    expect(held).toEqual([]);
    const unknown = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'pairings.resolve', params: { channel: 'webhook', code: 'NOPE2345', decision: 'approve' } });
    expect(unknown.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request' } });
    const badChannel = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'pairings.resolve', params: { channel: 'nochannel', code, decision: 'approve' } });
    expect(badChannel.body.error).toMatchObject({ code: -32004, data: { code: 'unknown_channel' } });
    const badParams = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'pairings.resolve', params: { channel: 'webhook', code, decision: 'maybe' } });
    expect(badParams.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request' } });
  });

  it('pairing: two first messages at once record one request and send one code', async () => {
    await Promise.all([inbound(s, 'dave', 'one'), inbound(s, 'dave', 'two')]);
    const rows = await s.rt.store.db.selectFrom('channel_senders').selectAll().where('peer', '=', 'dave').execute();
    expect(rows).toHaveLength(1);
    await until(() => sentTo('dave').length >= 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(sentTo('dave')).toHaveLength(1);
    expect(await s.rt.store.db.selectFrom('channel_held').selectAll().where('peer', '=', 'dave').execute()).toHaveLength(2);
  });

  it('pairing: resolves racing at once give one ok and already_resolved to the rest, never "expired" (probe E)', async () => {
    await inbound(s, 'erin', 'hello');
    await until(() => sentTo('erin').length === 1);
    const code = /pairing code is ([A-Z0-9]+)/.exec(sentTo('erin')[0]!)![1]!;
    const answers = await Promise.all(
      ['approve', 'approve', 'deny', 'approve'].map((decision) => s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'pairings.resolve', params: { channel: 'webhook', code, decision } })),
    );
    expect(answers.filter((a) => a.body.result).map((a) => a.body.result)).toEqual([{ status: 'ok' }]);
    for (const a of answers.filter((x) => x.body.error)) expect(a.body.error).toMatchObject({ code: -32009, data: { code: 'already_resolved' } });
  });

  it('allowlist takes only allowFrom; open takes anyone', async () => {
    const t = await startTestServer({ config: { channels: webhookChannel({ dmPolicy: 'allowlist', allowFrom: ['erin', 'kate'] }) } });
    try {
      await inbound(t, 'erin', 'hi');
      await inbound(t, 'frank', 'hi');
      await inbound(t, 'ERIN', 'hi'); // ASCII case does not count
      // Probe V: toLowerCase() folded the Kelvin sign to k, so \u212Aate was on kate's allowlist (and in her session).
      await inbound(t, '\u212Aate', 'hi');
      await until(async () => (await runsOf(t, 'agent:main:webhook:direct:erin')).length === 2);
      expect(await runsOf(t, 'agent:main:webhook:direct:frank')).toEqual([]);
      expect(await runsOf(t, 'agent:main:webhook:direct:kate')).toEqual([]);
      expect((await t.rt.store.db.selectFrom('runs').select('id').execute()).length).toBe(2);
      expect((await t.rpc<{ pairings: unknown[] }>('pairings.list', {})).pairings).toEqual([]);
      expect(sentTo('frank')).toEqual([]);
    } finally {
      await t.close();
    }
    const o = await startTestServer({ config: { channels: webhookChannel({ dmPolicy: 'open' }) } });
    try {
      await inbound(o, 'gina', 'hi');
      await until(async () => (await runsOf(o, 'agent:main:webhook:direct:gina')).length === 1);
    } finally {
      await o.close();
    }
  });

  it('a bad dmPolicy stops the start with the key named', async () => {
    const { loadConfig } = await import('../config');
    const fs = await import('node:fs');
    const path = await import('node:path');
    const os = await import('node:os');
    const f = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ct-cfg-')), 'c.json');
    fs.writeFileSync(f, JSON.stringify({ channels: { telegram: { dmPolicy: 'everyone' } } }));
    expect(() => loadConfig({ CROSSTALK_CONFIG: f, CROSSTALK_DATA_DIR: path.dirname(f) })).toThrow(/channels\.telegram\.dmPolicy/);
  });
});
