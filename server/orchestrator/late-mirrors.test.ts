// A mirror that reaches a session while its run is compacted mid-run is given to the model once: the compaction's
// rebuilt prompt holds it, and the read of late mirrors after the next tool step starts after it (run.promptThrough).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDS, FAKES } from '../channels/testing/fake-apis';
import { type FakePlatform, startFakePlatform } from '../channels/testing/fake-platform';
import { type ChatRequestBody, startFakeOpenAI, type FakeOpenAIServer } from '../models/testing/fake-openai-server';
import { startTestServer, type TestServer } from '../testing/harness';
import { COMPACTION_SYSTEM } from './compaction';

const MIRROR = 'mirrored while the summary was written';
const isSummarizer = (b: ChatRequestBody) => b.messages[0]?.role === 'system' && String(b.messages[0]?.content).startsWith(COMPACTION_SYSTEM);
const textOf = (m: ChatRequestBody['messages'][number]) => (typeof m.content === 'string' ? m.content : Array.isArray(m.content) ? (m.content as Array<{ text?: string }>).map((p) => p.text ?? '').join('') : '');

let fake: FakeOpenAIServer;
let tg: FakePlatform;
let s: TestServer;
let summarizing: () => void = () => {};
const steps: ChatRequestBody[] = [];

beforeAll(async () => {
  fake = await startFakeOpenAI();
  tg = await startFakePlatform(FAKES.telegram!.handler);
  process.env.OPENAI_BASE_URL = fake.baseURL;
  process.env.OPENAI_API_KEY = 'sk-test';
  fake.setHandler((body) => {
    // The summary takes a while: the test mirrors into the session meanwhile.
    if (isSummarizer(body)) {
      summarizing();
      return { text: 'SUMMARY: the user asked for two commands.', usage: { promptTokens: 50, completionTokens: 9 }, delayMs: 800 };
    }
    if (textOf(body.messages[body.messages.length - 1]!) === 'warm up') return { text: 'warmed', usage: { promptTokens: 100, completionTokens: 1 } };
    steps.push(body);
    // Step 1 reports a prompt far over the window, so the next step's prompt is compacted first.
    if (steps.length === 1) return { toolCalls: [{ name: 'exec', args: { command: 'echo first' } }], usage: { promptTokens: 60_000, completionTokens: 5 } };
    if (steps.length === 2) return { toolCalls: [{ name: 'exec', args: { command: 'echo second' } }], usage: { promptTokens: 500, completionTokens: 5 } };
    return { text: 'done', usage: { promptTokens: 500, completionTokens: 5 } };
  });
  s = await startTestServer({
    config: {
      agents: [{ id: 'gpt', model: 'openai:gpt-late-mirrors', tools: { exec: 'auto' } }],
      models: { 'openai:gpt-late-mirrors': { contextWindow: 20_000 } },
      compaction: { threshold: 0.8, keepRecent: 2 },
      channels: { telegram: { botToken: CREDS.telegramToken, apiBaseUrl: tg.url } },
    },
  });
});
afterAll(async () => {
  await s?.close();
  await tg?.close();
  await fake?.close();
});

describe('a mirror written while the run is compacted mid-run', () => {
  it('reaches the model once: in the rebuilt prompt, not again after the next tool step', async () => {
    const key = 'agent:gpt:late-mirrors';
    // A turn before, for the compaction to summarize (the run's own turn is kept whole).
    const warm = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'warm up' });
    expect(await s.rpc('agent.wait', { runId: warm.runId })).toMatchObject({ status: 'ok', response: 'warmed' });
    const summary = new Promise<void>((r) => (summarizing = r));
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'run two commands' });
    await summary;
    await s.rpc('send', { channel: 'telegram', to: '4242', sessionKey: key, message: MIRROR });
    expect(await s.rpc('agent.wait', { runId, timeoutMs: 30_000 })).toMatchObject({ status: 'ok', response: 'done' });
    expect(steps).toHaveLength(3);
    const count = (b: ChatRequestBody) => b.messages.filter((m) => textOf(m).includes(MIRROR)).length;
    // The compaction before step 2 read the session after the mirror was written: step 2 has it once.
    expect(count(steps[1]!)).toBe(1);
    // Before, the run's read of late mirrors after step 2's tool started from before the compaction: twice here.
    expect(count(steps[2]!)).toBe(1);
  });
});
