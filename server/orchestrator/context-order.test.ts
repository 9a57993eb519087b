// CONTRACT §5 "Context": a row written while a run is inside a tool call never lands between that call and its result
// in a later prompt (a split pair makes every later provider call of the session an HTTP 400).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAIServer } from '../models/testing/fake-openai-server';
import { CREDS, FAKES } from '../channels/testing/fake-apis';
import { type FakePlatform, startFakePlatform } from '../channels/testing/fake-platform';
import { startTestServer, type TestServer } from '../testing/harness';
import type { TranscriptMessage } from '../events/types';
import { toPromptMessages, withToolResultsAdjacent } from './context';

let fake: FakeOpenAIServer;
let tg: FakePlatform;
let s: TestServer;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  tg = await startFakePlatform(FAKES.telegram!.handler);
  process.env.OPENAI_BASE_URL = fake.baseURL;
  process.env.OPENAI_API_KEY = 'sk-test';
  s = await startTestServer({
    config: {
      agents: [{ id: 'gpt', model: 'openai:gpt-test', tools: { exec: 'auto' } }],
      channels: { telegram: { botToken: CREDS.telegramToken, apiBaseUrl: tg.url } },
    },
  });
});
afterAll(async () => {
  await s?.close();
  await tg?.close();
  await fake?.close();
});

const row = (id: number, over: Partial<TranscriptMessage>): TranscriptMessage =>
  ({ id: String(id), sessionKey: 'agent:gpt:main', role: 'user', kind: 'message', content: '', createdAt: '2026-01-01T00:00:00.000Z', author: { type: 'user', id: 'u' }, ...over }) as TranscriptMessage;

describe('a row written during a tool call', () => {
  it('moves after the results of the calls open when it arrived, and nothing else moves', () => {
    const call = (id: number, callId: string) => row(id, { role: 'assistant', kind: 'tool_call', tool: { name: 'exec', callId, args: {}, result: undefined } });
    const result = (id: number, callId: string) => row(id, { role: 'tool', kind: 'tool_result', tool: { name: 'exec', callId, args: {}, result: { ok: 1 } } });
    const rows = [
      row(1, { content: 'go' }),
      call(2, 'a'),
      call(3, 'b'),
      row(4, { role: 'assistant', kind: 'mirror', content: 'mirror' }),
      row(5, { kind: 'inter_session', content: 'from a peer' }),
      result(6, 'a'),
      row(7, { kind: 'agent_callback_result', content: 'callback' }),
      result(8, 'b'),
      row(9, { role: 'assistant', content: 'done' }),
      call(10, 'pending'), // no result yet: the resume path owns it, it holds nothing back
      row(11, { content: 'after' }),
    ];
    expect(withToolResultsAdjacent(rows).map((r) => r.id)).toEqual(['1', '2', '3', '6', '8', '4', '5', '7', '9', '10', '11']);
    const prompt = toPromptMessages(rows);
    const roles = prompt.map((m) => m.role);
    expect(roles.slice(0, 3)).toEqual(['user', 'assistant', 'tool']);
    const tool = prompt[2] as Extract<(typeof prompt)[number], { role: 'tool' }>;
    expect(tool.content.map((p) => (p as { toolCallId: string }).toolCallId)).toEqual(['a', 'b']);
  });

  it("for the run the prompt is for (re-driven, or compacted mid-run), its own rows written during its calls are left out: its prompt never had them", () => {
    // A send_message post of run r1 sits between its calls and their results. Placed after the results it ended the
    // prompt with the run's own text, and the model made the step again (probe W); another run's row still moves.
    const call = (id: number, callId: string) => row(id, { role: 'assistant', kind: 'tool_call', runId: 'r1', tool: { name: 'send_message', callId, args: {}, result: undefined } });
    const result = (id: number, callId: string) => row(id, { role: 'tool', kind: 'tool_result', runId: 'r1', tool: { name: 'send_message', callId, args: {}, result: { ok: 1 } } });
    const rows = [
      row(1, { content: 'go', runId: 'r1' }),
      call(2, 'a'),
      row(3, { role: 'assistant', content: 'posted', runId: 'r1', author: { type: 'persona', id: 'p' } as TranscriptMessage['author'] }),
      row(4, { kind: 'inter_session', content: 'from a peer', runId: 'r0' }),
      result(5, 'a'),
    ];
    expect(withToolResultsAdjacent(rows, 'r1').map((r) => r.id)).toEqual(['1', '2', '5', '4']);
    expect(withToolResultsAdjacent(rows).map((r) => r.id)).toEqual(['1', '2', '5', '3', '4']);
    expect(toPromptMessages(rows.slice(0, 3).concat(rows[4]!), 'r1').map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
  });

  it('a mirror sent into a session while its run is inside exec: the next prompt keeps the call and its result adjacent', async () => {
    const key = 'agent:gpt:main';
    fake.enqueue({ toolCalls: [{ name: 'exec', args: { command: 'sleep 1; echo slept' } }] }, { text: 'first done' });
    const first = fake.requests.length;
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'run a slow command' });
    // Wait until the call is written (the tool is running), then mirror a channel send into the same session.
    for (let i = 0; i < 200; i++) {
      const h = await s.rpc<{ messages: TranscriptMessage[] }>('chat.history', { sessionKey: key, includeTools: true });
      if (h.messages.some((m) => m.kind === 'tool_call')) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    await s.rpc('send', { channel: 'telegram', to: '4242', sessionKey: key, message: 'mirrored while the tool ran' });
    expect(await s.rpc('agent.wait', { runId })).toMatchObject({ status: 'ok', response: 'first done' });
    const h = (await s.rpc<{ messages: TranscriptMessage[] }>('chat.history', { sessionKey: key, includeTools: true })).messages.reverse();
    const kinds = h.map((m) => m.kind);
    expect(kinds.indexOf('mirror')).toBeGreaterThan(kinds.indexOf('tool_call'));
    expect(kinds.indexOf('mirror')).toBeLessThan(kinds.indexOf('tool_result')); // the transcript keeps arrival order
    // The run's own next step (after the tool) already reads the mirror, after the call's result (CONTRACT §5
    // "Context"); before, a run built its prompt once and only the session's next run saw it.
    const step2 = fake.requests[first + 1]!.body.messages;
    const resultAt = step2.findIndex((m) => m.role === 'tool');
    expect(resultAt).toBeGreaterThan(-1);
    expect(step2.findIndex((m) => typeof m.content === 'string' && m.content.includes('mirrored while the tool ran'))).toBeGreaterThan(resultAt);

    fake.enqueue({ text: 'second done' });
    const before = fake.requests.length;
    const next = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'and now?' });
    expect(await s.rpc('agent.wait', { runId: next.runId })).toMatchObject({ status: 'ok', response: 'second done' });
    const msgs = fake.requests[before]!.body.messages;
    const at = msgs.findIndex((m) => m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0);
    expect(at).toBeGreaterThan(-1);
    const callId = (msgs[at]!.tool_calls as Array<{ id: string }>)[0]!.id;
    expect(msgs[at + 1]).toMatchObject({ role: 'tool', tool_call_id: callId });
    const mirrorAt = msgs.findIndex((m) => typeof m.content === 'string' && m.content.includes('mirrored while the tool ran'));
    expect(mirrorAt).toBeGreaterThan(at + 1);
  });
});
