// Compaction on the OpenAI wire (loopback fake): the provider's reported usage drives the trigger, the summary comes from
// the agent's own model, and a failing summarizer leaves the session usable on the newest messages that fit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChatRequestBody, startFakeOpenAI, type FakeOpenAIServer } from '../models/testing/fake-openai-server';
import { startTestServer, type TestServer } from '../testing/harness';
import { COMPACTION_SYSTEM } from './compaction';
import { SUMMARY_PREFIX } from './context';

let fake: FakeOpenAIServer;
let s: TestServer;
const WINDOW = 20_000;
let summarizerFails = false;
let reported = 1000;

const isSummarizer = (b: ChatRequestBody) => b.messages[0]?.role === 'system' && String(b.messages[0]?.content).startsWith(COMPACTION_SYSTEM);
const textOf = (m: ChatRequestBody['messages'][number]) => (typeof m.content === 'string' ? m.content : (m.content as Array<{ text?: string }>).map((p) => p.text ?? '').join(''));

beforeAll(async () => {
  fake = await startFakeOpenAI();
  process.env.OPENAI_BASE_URL = fake.baseURL;
  process.env.OPENAI_API_KEY = 'sk-test';
  fake.setHandler((body) => {
    if (isSummarizer(body)) return summarizerFails ? { status: 500, message: 'summarizer down' } : { text: 'SUMMARY: the user said one and two.', usage: { promptTokens: 50, completionTokens: 9 } };
    const last = body.messages[body.messages.length - 1]!;
    return { text: `ok ${textOf(last)}`, usage: { promptTokens: reported, completionTokens: 5 } };
  });
  s = await startTestServer({
    config: {
      agents: [{ id: 'gpt', model: 'openai:gpt-test' }],
      models: { 'openai:gpt-test': { contextWindow: WINDOW, inputPerMTok: 1, outputPerMTok: 2 } },
      compaction: { threshold: 0.8, keepRecent: 2 },
    },
  });
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

const ask = async (sessionKey: string, message: string) => {
  const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey, message });
  return s.rpc<{ status: string; response?: string; usage?: { inputTokens: number; outputTokens: number; costUsd?: number } }>('agent.wait', { runId });
};
const phases = async (sessionKey: string) => {
  await s.rt.bus.drain();
  const rows = await s.rt.store.db.selectFrom('events').select('data').where('session_key', '=', sessionKey).where('stream', '=', 'compaction').orderBy('id').execute();
  return rows.map((r) => JSON.parse(r.data) as { phase: string; tokensBefore: number; tokensAfter: number; error?: string });
};

describe('compaction on the OpenAI wire', () => {
  it('the reported prompt size triggers it; the next request carries the summary and the kept rows', async () => {
    const key = 'agent:gpt:wire-ok';
    reported = 1000;
    expect(await ask(key, 'one')).toMatchObject({ status: 'ok', response: 'ok one', usage: { inputTokens: 1000, outputTokens: 5, costUsd: 0.00101 } });
    // The provider now reports a prompt far above our estimate: the next estimate is corrected by it and passes 80%.
    reported = 60_000;
    await ask(key, 'two');
    expect(await phases(key)).toEqual([]);
    const before = fake.requests.length;
    reported = 1000;
    expect(await ask(key, 'three')).toMatchObject({ status: 'ok', response: 'ok three' });
    const [summarize, step] = fake.requests.slice(before).map((r) => r.body);
    expect(isSummarizer(summarize!)).toBe(true);
    expect(summarize!.messages[1]!.content).toEqual([
      { type: 'text', text: '[user] one' },
      { type: 'text', text: '[Gpt] ok one' },
      { type: 'text', text: '[user] two' },
    ]);
    expect(step!.messages.slice(1).map((m) => [m.role, textOf(m)])).toEqual([
      ['user', `${SUMMARY_PREFIX}SUMMARY: the user said one and two.`],
      ['assistant', 'ok two'],
      ['user', 'three'],
    ]);
    const ev = await phases(key);
    expect(ev.map((e) => e.phase)).toEqual(['start', 'end']);
    expect(ev[1]!.tokensBefore).toBeGreaterThan(WINDOW * 0.8);
    expect(ev[1]!.tokensAfter).toBeGreaterThan(0);
  });

  it('a failing summarizer emits an error and the run goes on with the newest messages that fit', async () => {
    const key = 'agent:gpt:wire-fail';
    summarizerFails = true;
    reported = 60_000;
    await ask(key, 'alpha');
    const before = fake.requests.length;
    reported = 1000;
    expect(await ask(key, 'beta')).toMatchObject({ status: 'ok', response: 'ok beta' });
    const [summarize, step] = fake.requests.slice(before).map((r) => r.body);
    expect(isSummarizer(summarize!)).toBe(true);
    expect(step!.messages.slice(1).map((m) => [m.role, textOf(m)])).toEqual([['user', 'beta']]);
    const ev = await phases(key);
    expect(ev.map((e) => e.phase)).toEqual(['start', 'error']);
    expect(ev[1]!.error).toMatch(/summarizer down/);
    expect(await s.rt.store.db.selectFrom('messages').select('id').where('session_key', '=', key).where('kind', '=', 'compaction').execute()).toEqual([]);
    // Still usable afterwards.
    summarizerFails = false;
    expect(await ask(key, 'gamma')).toMatchObject({ status: 'ok', response: 'ok gamma' });
  });
});
