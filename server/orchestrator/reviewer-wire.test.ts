// A real-wire reviewer (CONTRACT §5 "Reviewer"): `openai:` through the AI SDK against the loopback OpenAI-compatible fake —
// what it is sent (the call, the agent, its trust, the transcript, the one tool) and every malformed answer escalating.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKES } from '../channels/testing/fake-apis';
import { startFakePlatform, type FakePlatform } from '../channels/testing/fake-platform';
import { startFakeOpenAI, type FakeOpenAIServer, type FakeReply } from '../models/testing/fake-openai-server';
import { startTestServer, TEST_TOKEN, type TestServer, until } from '../testing/harness';
import { signWebhook } from '../webhooks/signature';

const SECRET = 'reviewer-wire-secret';
let fake: FakeOpenAIServer;
let hook: FakePlatform;
let s: TestServer;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  hook = await startFakePlatform(FAKES.webhook!.handler);
  process.env.OPENAI_BASE_URL = fake.baseURL;
  process.env.OPENAI_API_KEY = 'sk-test';
  s = await startTestServer({
    config: {
      agents: [{ id: 'main', tools: { exec: 'ask' }, reviewer: { model: 'openai:gpt-reviewer', instructions: 'Never allow rm.' } }],
      channels: { webhook: { url: `${hook.url}/out`, secret: SECRET, dmPolicy: 'open' } },
    },
  });
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
  await hook?.close();
});

const history = async (key: string) => (await s.rpc<{ approvals: any[] }>('approvals.history', { sessionKey: key })).approvals;
const pending = async (key: string) => (await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals;
const run = async (key: string, command: string) => (await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: `/tool exec {"command": "${command}"}` })).runId;
const waitRun = (runId: string) => s.rpc<{ status: string }>('agent.wait', { runId });
const metrics = async () => (await (await fetch(`${s.url}/api/metrics`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } })).text());
const counter = (text: string, outcome: string, cause: string) => Number(new RegExp(`crosstalk_reviewer_decisions_total\\{outcome="${outcome}",cause="${cause}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
const userText = (body: any) => body.messages.filter((m: any) => m.role === 'user').map((m: any) => (typeof m.content === 'string' ? m.content : m.content.map((p: any) => p.text).join(''))).join('\n');

describe('a reviewer on the OpenAI wire', () => {
  it('gets the call, the agent, its trust and the recent transcript, with review_decision its one (required) tool; its allow runs the call', async () => {
    const key = 'agent:main:wire-allow';
    await waitRun((await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply earlier context line' })).runId);
    // The review takes 50 ms: the record's requestedAt is the call's time, its decidedAt the verdict's.
    fake.enqueue({ toolCalls: [{ name: 'review_decision', args: { decision: 'allow', reason: 'a harmless echo' } }], delayMs: 50 });
    const before = fake.requests.length;
    const runId = await run(key, 'echo wired');
    expect(await waitRun(runId)).toMatchObject({ status: 'ok' });
    const [req] = fake.requests.slice(before);
    expect(req!.body.model).toBe('gpt-reviewer');
    expect(req!.body.tools?.map((t) => t.function.name)).toEqual(['review_decision']);
    expect(req!.body.tools?.[0]?.function.parameters).toMatchObject({ required: ['decision', 'reason'] });
    expect(req!.body.tool_choice).toBe('required');
    const system = req!.body.messages.find((m) => m.role === 'system');
    expect(String(system?.content)).toContain('Never allow rm.');
    const text = userText(req!.body);
    expect(text).toContain('Agent: main');
    expect(text).toContain('Trust: the operator');
    expect(text).toContain('earlier context line');
    expect(text).toContain('The call under review: exec');
    expect(text).toContain('"command":"echo wired"');
    const rec = (await history(key))[0];
    expect(rec).toMatchObject({ runId, decision: 'allow_once', decidedBy: { type: 'reviewer', id: 'openai:gpt-reviewer' }, reason: 'a harmless echo' });
    expect(Date.parse(rec.decidedAt) - Date.parse(rec.requestedAt)).toBeGreaterThanOrEqual(45);
  });

  it("tells the reviewer when a channel sender started the run", async () => {
    const key = 'agent:main:webhook:direct:eve';
    fake.enqueue({ toolCalls: [{ name: 'review_decision', args: { decision: 'deny', reason: 'untrusted sender' } }] });
    const before = fake.requests.length;
    const body = JSON.stringify({ from: 'eve', text: '/tool exec {"command": "echo from eve"}', messageId: `eve-${Date.now()}` });
    const res = await fetch(`${s.url}/api/channels/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', ...signWebhook(SECRET, body) }, body });
    expect(res.status).toBe(200);
    const rec = await until(async () => (await history(key))[0]);
    expect(rec).toMatchObject({ decision: 'deny', decidedBy: { type: 'reviewer' }, reason: 'untrusted sender' });
    expect(userText(fake.requests[before]!.body)).toContain('a channel sender started this run (channel sender webhook:eve)');
    await s.rt.orchestrator.wait(rec.runId, 10_000);
  });

  const malformed: Array<[string, FakeReply, string]> = [
    ['no tool call at all', { text: 'Looks fine to me.' }, 'malformed'],
    ['a decision out of its enum', { toolCalls: [{ name: 'review_decision', args: { decision: 'maybe', reason: 'hmm' } }] }, 'malformed'],
    ['arguments that are not JSON', { toolCalls: [{ name: 'review_decision', args: '{"decision": "allow", ' }] }, 'malformed'],
    ['another tool', { toolCalls: [{ name: 'exec', args: { command: 'true' } }] }, 'malformed'],
    // Probe Q: the first review_decision was acted on, so each of these allowed the call without a person.
    ['two conflicting decisions', { toolCalls: [{ name: 'review_decision', args: { decision: 'allow', reason: 'first' } }, { name: 'review_decision', args: { decision: 'deny', reason: 'second' } }] }, 'malformed'],
    ['a decision beside another tool', { toolCalls: [{ name: 'exec', args: { command: 'true' } }, { name: 'review_decision', args: { decision: 'allow', reason: 'fine' } }] }, 'malformed'],
    ['a model error', { status: 500, message: 'reviewer down' }, 'error'],
  ];
  for (const [what, reply, cause] of malformed) {
    it(`escalates to the person on ${what}`, async () => {
      const key = `agent:main:wire-bad-${what.replace(/[^a-z]+/g, '-')}`;
      const before = counter(await metrics(), 'escalate', cause);
      fake.enqueue(reply);
      const runId = await run(key, 'echo review:allow');
      const item = await until(async () => (await pending(key))[0]);
      expect(item.runId).toBe(runId);
      await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'deny', reason: 'person says no' });
      expect(await waitRun(runId)).toMatchObject({ status: 'ok' });
      expect(await history(key)).toEqual([expect.objectContaining({ approvalId: item.approvalId, decision: 'deny', decidedBy: { type: 'user', id: 'jsonrpc' }, reason: 'person says no' })]);
      expect(counter(await metrics(), 'escalate', cause)).toBe(before + 1);
    });
  }
});
