// The reviewer (CONTRACT §5 "Reviewer") with the scripted model: allow, deny, escalate, the streak of denials, a deny
// policy it never sees, and a channel sender's run — through the real run loop, on either store (TEST_STORE).
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FAKES } from '../channels/testing/fake-apis';
import { startFakePlatform, type FakePlatform } from '../channels/testing/fake-platform';
import { startTestServer, TEST_TOKEN, type TestServer, until } from '../testing/harness';
import { signWebhook } from '../webhooks/signature';
import { createReviewer } from './reviewer';

const SECRET = 'reviewer-hook-secret';
let hook: FakePlatform;
let s: TestServer;

beforeAll(async () => {
  hook = await startFakePlatform(FAKES.webhook!.handler);
  s = await startTestServer({
    config: {
      agents: [
        { id: 'main', tools: { exec: 'ask' }, reviewer: { model: 'scripted' } },
        { id: 'strict', tools: { exec: 'deny' }, reviewer: { model: 'scripted' } },
        { id: 'plain', tools: { exec: 'ask' } },
      ],
      channels: { webhook: { url: `${hook.url}/out`, secret: SECRET, dmPolicy: 'open' } },
    },
  });
});
afterAll(async () => {
  await s?.close();
  await hook?.close();
});

type Rec = { approvalId: string; runId: string; tool: string; decision: string; decidedBy: { type: string; id?: string }; reason?: string };
const history = async (key: string) => (await s.rpc<{ approvals: Rec[] }>('approvals.history', { sessionKey: key })).approvals;
const pending = async (key: string) => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals;

async function run(key: string, command: string) {
  const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: `/tool exec {"command": "${command}"}` });
  return runId;
}
const waitRun = (runId: string) => s.rpc<{ status: string; response?: string }>('agent.wait', { runId });
async function toolResult(key: string, runId: string) {
  const h = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: key, includeTools: true });
  return h.messages.find((m) => m.kind === 'tool_result' && m.runId === runId);
}
/** A run's `approval` events, from the event log (the stream's source on either store). */
const approvalEvents = async (runId: string) =>
  (await s.rt.store.db.selectFrom('events').select(['data', 'id']).where('run_id', '=', runId).where('stream', '=', 'approval').orderBy('id').execute()).map((r) => JSON.parse(r.data) as Record<string, any>);
const metrics = async () => (await (await fetch(`${s.url}/api/metrics`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } })).text());
const counter = (text: string, outcome: string, cause: string) => Number(new RegExp(`crosstalk_reviewer_decisions_total\\{outcome="${outcome}",cause="${cause}"\\} (\\d+)`).exec(text)?.[1] ?? 0);

describe('the reviewer (scripted model)', () => {
  it('allows a call whose arguments say review:allow: it runs, no person is asked, the record and the card say the reviewer', async () => {
    const key = 'agent:main:rev-allow';
    const before = counter(await metrics(), 'allow', 'model');
    const runId = await run(key, 'echo review:allow');
    expect(await waitRun(runId)).toMatchObject({ status: 'ok' });
    const row = await toolResult(key, runId);
    expect(row.tool.result).toMatchObject({ exitCode: 0, stdout: 'review:allow\n' });
    expect(row.meta.decided).toMatchObject({ decision: 'allow_once', by: { type: 'reviewer', id: 'scripted' }, reason: expect.stringContaining('review:allow') });
    const [rec] = await history(key);
    expect(rec).toMatchObject({ runId, tool: 'exec', decision: 'allow_once', decidedBy: { type: 'reviewer', id: 'scripted' }, reason: expect.stringContaining('review:allow') });
    // No person was asked: no pending item, no `requested` event; the `resolved` event names the reviewer.
    expect((await approvalEvents(runId)).map((d) => [d.phase, d.by?.type])).toEqual([['resolved', 'reviewer']]);
    expect(await pending(key)).toEqual([]);
    expect(counter(await metrics(), 'allow', 'model')).toBe(before + 1);
  });

  it('denies a call whose arguments say review:deny: the model gets denied with the reviewer\'s reason', async () => {
    const key = 'agent:main:rev-deny';
    const before = counter(await metrics(), 'deny', 'model');
    const runId = await run(key, 'echo review:deny');
    expect(await waitRun(runId)).toMatchObject({ status: 'ok' });
    const row = await toolResult(key, runId);
    expect(row.tool.result).toEqual({ status: 'denied', reason: expect.stringContaining('review:deny') });
    expect(row.meta.decided).toMatchObject({ decision: 'deny', by: { type: 'reviewer' } });
    expect(await history(key)).toEqual([expect.objectContaining({ runId, decision: 'deny', decidedBy: { type: 'reviewer', id: 'scripted' } })]);
    expect(counter(await metrics(), 'deny', 'model')).toBe(before + 1);
  });

  it('escalates the rest to the person as usual, with the reviewer\'s reason on the request; the person\'s decision is recorded as theirs', async () => {
    const key = 'agent:main:rev-escalate';
    const runId = await run(key, 'echo nothing-said');
    const item = await until(async () => (await pending(key))[0]);
    expect(item).toMatchObject({ tool: 'exec', runId });
    expect(await until(async () => (await approvalEvents(runId))[0])).toMatchObject({ phase: 'requested', review: { decision: 'escalate', reason: expect.stringContaining('no review:allow') } });
    await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'allow_once' });
    expect(await waitRun(runId)).toMatchObject({ status: 'ok' });
    expect((await toolResult(key, runId)).meta.decided).toMatchObject({ decision: 'allow_once', by: { type: 'user', id: 'jsonrpc' } });
    expect(await history(key)).toEqual([expect.objectContaining({ approvalId: item.approvalId, decision: 'allow_once', decidedBy: { type: 'user', id: 'jsonrpc' } })]);
  });

  it('after escalateAfterDenials (2) denials in a row in a session, the person decides every call — even one it would allow', async () => {
    const key = 'agent:main:rev-streak';
    // An allow between denials breaks the streak: deny, allow, deny is no streak of 2.
    for (const c of ['echo review:deny', 'echo review:allow', 'echo review:deny']) expect(await waitRun(await run(key, c))).toMatchObject({ status: 'ok' });
    expect(await pending(key)).toEqual([]);
    // The second denial in a row: the streak is reached.
    expect(await waitRun(await run(key, 'echo review:deny'))).toMatchObject({ status: 'ok' });
    const before = counter(await metrics(), 'escalate', 'streak');
    for (const c of ['echo review:allow again', 'echo review:deny again']) {
      const runId = await run(key, c);
      const item = await until(async () => (await pending(key))[0]);
      expect(item.runId).toBe(runId);
      await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'allow_once' });
      expect(await waitRun(runId)).toMatchObject({ status: 'ok' });
    }
    expect(counter(await metrics(), 'escalate', 'streak')).toBe(before + 2);
    expect((await history(key)).map((r) => [r.decision, r.decidedBy.type])).toEqual([
      ['allow_once', 'user'],
      ['allow_once', 'user'],
      ['deny', 'reviewer'],
      ['deny', 'reviewer'],
      ['allow_once', 'reviewer'],
      ['deny', 'reviewer'],
    ]);
    // Another session of the same agent has its own streak.
    const other = 'agent:main:rev-streak-other';
    expect(await waitRun(await run(other, 'echo review:allow'))).toMatchObject({ status: 'ok' });
    expect((await history(other))[0]).toMatchObject({ decidedBy: { type: 'reviewer' } });
  });

  it('a call the reviewer escalated breaks a streak: deny, escalate, deny is no streak of 2', async () => {
    const key = 'agent:main:rev-streak-broken';
    expect(await waitRun(await run(key, 'echo review:deny'))).toMatchObject({ status: 'ok' });
    const escalated = await run(key, 'echo nothing-said');
    const item = await until(async () => (await pending(key))[0]);
    await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'allow_once' });
    expect(await waitRun(escalated)).toMatchObject({ status: 'ok' });
    expect(await waitRun(await run(key, 'echo review:deny'))).toMatchObject({ status: 'ok' });
    // Before: the person's row dropped out of the reviewer's sequence, which read deny, deny, and this call went to the
    // person unseen (cause streak) though the reviewer never denied twice in a row.
    const before = counter(await metrics(), 'escalate', 'streak');
    expect(await waitRun(await run(key, 'echo review:allow'))).toMatchObject({ status: 'ok' });
    expect(await pending(key)).toEqual([]);
    expect(counter(await metrics(), 'escalate', 'streak')).toBe(before);
    expect((await history(key)).map((r) => [r.decision, r.decidedBy.type])).toEqual([
      ['allow_once', 'reviewer'],
      ['deny', 'reviewer'],
      ['allow_once', 'user'],
      ['deny', 'reviewer'],
    ]);
  });

  it('a deny policy stays a deny: the reviewer only sees ask calls', async () => {
    const key = 'agent:strict:rev-policy';
    const m = await metrics();
    const runId = await run(key, 'echo review:allow');
    expect(await waitRun(runId)).toMatchObject({ status: 'ok' });
    expect((await toolResult(key, runId)).tool.result).toEqual({ status: 'denied', reason: 'tool policy denies exec' });
    expect(await history(key)).toEqual([]);
    expect(counter(await metrics(), 'allow', 'model')).toBe(counter(m, 'allow', 'model'));
  });

  it('an agent without a reviewer asks the person, whatever the arguments say', async () => {
    const key = 'agent:plain:rev-none';
    const runId = await run(key, 'echo review:allow');
    const item = await until(async () => (await pending(key))[0]);
    await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'deny' });
    expect(await waitRun(runId)).toMatchObject({ status: 'ok' });
    expect((await history(key))[0]).toMatchObject({ decision: 'deny', decidedBy: { type: 'user', id: 'jsonrpc' } });
  });

  it("reviews a channel sender's run (channelTools: exec asks): allows and denies it like any other", async () => {
    const key = 'agent:main:webhook:direct:mallory';
    const send = async (text: string) => {
      const body = JSON.stringify({ from: 'mallory', text, messageId: `m-${text.length}-${Date.now()}` });
      const res = await fetch(`${s.url}/api/channels/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', ...signWebhook(SECRET, body) }, body });
      expect(res.status).toBe(200);
    };
    await send('/tool exec {"command": "echo review:allow from chat"}');
    const first = await until(async () => (await history(key))[0]);
    expect(first).toMatchObject({ tool: 'exec', decision: 'allow_once', decidedBy: { type: 'reviewer' } });
    await s.rt.orchestrator.wait(first.runId, 10_000);
    expect((await toolResult(key, first.runId)).tool.result).toMatchObject({ stdout: 'review:allow from chat\n' });
    // The reviewer was told whose run it is (its trust: a channel sender's).
    const row = await s.rt.store.getApproval(first.approvalId);
    expect(JSON.parse(row!.trust!)).toEqual({ kind: 'channel', channel: 'webhook', peer: 'mallory' });
    await send('/tool exec {"command": "echo review:deny from chat"}');
    const second = await until(async () => (await history(key)).find((r) => r.decision === 'deny'));
    expect(second.decidedBy).toEqual({ type: 'reviewer', id: 'scripted' });
    await s.rt.orchestrator.wait(second.runId, 10_000);
    expect((await toolResult(key, second.runId)).tool.result).toMatchObject({ status: 'denied' });
  });
});

describe('a reviewer model that never answers', () => {
  it('is given up after its timeout: the person decides, and the reason says why', async () => {
    let aborted = false;
    const hanging = {
      doGenerate: (o: { abortSignal?: AbortSignal }) =>
        new Promise((_, reject) => o.abortSignal?.addEventListener('abort', () => ((aborted = true), reject(o.abortSignal!.reason)), { once: true })),
    };
    const inc = vi.fn();
    const review = createReviewer({
      model: () => hanging as never,
      transcript: async () => [],
      recentDecisions: async () => [],
      metrics: { reviewerDecisions: { inc } } as never,
      log: pino({ level: 'silent' }),
      timeoutMs: 200,
    });
    const agent = { id: 'main', reviewer: { model: 'openai:slow', escalateAfterDenials: 0 } };
    // Before: no timeout, the call waited as long as the model did (here: until its run was cancelled).
    const verdict = await review({ agent: agent as never, sessionKey: 'agent:main:main', tool: 'exec', args: {}, trust: { kind: 'operator' } as never, signal: new AbortController().signal });
    expect(verdict).toEqual({ decision: 'escalate', reason: 'the reviewer did not answer within 200 ms: a person decides', cause: 'error' });
    expect(aborted).toBe(true);
    expect(inc).toHaveBeenCalledWith({ outcome: 'escalate', cause: 'error' });
  });
});
