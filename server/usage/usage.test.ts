// Usage and cost: price arithmetic, context windows, sums over a delegate tree three levels deep, agent.wait usage, metrics.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer } from '../testing/harness';
import { contextWindowFor, costOf, priceFor } from './prices';

describe('prices and windows', () => {
  it('prices uncached input, cached input and output per million tokens', () => {
    const price = priceFor('openai:gpt-4o', { 'openai:gpt-4o': { inputPerMTok: 3, outputPerMTok: 15, cachedInputPerMTok: 0.3 } });
    expect(costOf({ inputTokens: 1000, cachedTokens: 400, outputTokens: 100 }, price)).toBe(0.00342);
    // no cached price: cached input at the input price
    expect(costOf({ inputTokens: 1000, cachedTokens: 400, outputTokens: 100 }, { inputPerMTok: 3, outputPerMTok: 15 })).toBe(0.0045);
    expect(costOf({ inputTokens: 2_000_000, cachedTokens: 0, outputTokens: 1_000_000 }, { inputPerMTok: 0.15, outputPerMTok: 0.6 })).toBe(0.9);
    // unknown price: 0
    expect(priceFor('openai:other', {})).toBeNull();
    expect(costOf({ inputTokens: 1000, cachedTokens: 0, outputTokens: 1000 }, null)).toBe(0);
  });

  it('knows windows of known models; the config overrides them', () => {
    expect(contextWindowFor('scripted', {})).toBe(32_000);
    expect(contextWindowFor('openai:gpt-4o-mini', {})).toBe(128_000);
    expect(contextWindowFor('anthropic:claude-sonnet-4-5', {})).toBe(200_000);
    // Any claude-* (README): one named after the table was written too; the 100k ones of old keep theirs.
    expect(contextWindowFor('anthropic:claude-opus-5', {})).toBe(200_000);
    expect(contextWindowFor('anthropic:claude-2.1', {})).toBe(200_000);
    expect(contextWindowFor('anthropic:claude-2.0', {})).toBe(100_000);
    expect(contextWindowFor('anthropic:claude-instant-1.2', {})).toBe(100_000);
    expect(contextWindowFor('openai:gpt-4o-mini', { 'openai:gpt-4o-mini': { contextWindow: 64_000 } })).toBe(64_000);
    expect(contextWindowFor('compatible:llama3', {})).toBe(8192);
  });
});

type Usage = { inputTokens: number; outputTokens: number; costUsd: number; runs: number; tree: { inputTokens: number; outputTokens: number; costUsd: number; sessions: number }; unpricedModels: string[] };

describe('usage over a delegate tree', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ config: { models: { scripted: { inputPerMTok: 2, outputPerMTok: 10 } } } });
  });
  afterAll(() => s.close());

  const cost = (u: { inputTokens: number; outputTokens: number }) => Math.round(((u.inputTokens * 2 + u.outputTokens * 10) / 1e6) * 1e10) / 1e10;

  it('sums every delegate and session started, three levels deep, with the cost from models.<spec>', async () => {
    const delegate = (agent_id: string, prompt: string) => `/tool delegate_agent ${JSON.stringify({ agent_id, prompt })}`;
    const message = [delegate('researcher', delegate('writer', delegate('researcher', 'deepest'))), '/tool sessions_send {"sessionKey":"agent:writer:side","message":"hello side"}'].join('\n');
    const key = 'agent:main:tree';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message });
    const w = await s.rpc<{ status: string; usage: { inputTokens: number; outputTokens: number; costUsd: number } }>('agent.wait', { runId });
    expect(w.status).toBe('ok');
    expect(w.usage.inputTokens).toBeGreaterThan(0);
    expect(w.usage.costUsd).toBe(cost(w.usage));

    // The tree: main → researcher → writer → researcher (three delegate levels), plus agent:writer:side that main created.
    const keys = [key];
    for (let depth = 0; depth < 3; depth++) {
      const child = await s.rt.store.db.selectFrom('sessions').select('key').where('parent_key', '=', keys[keys.length - 1]!).executeTakeFirstOrThrow();
      keys.push(child.key);
    }
    expect(keys.slice(1).map((k) => k.split(':')[1])).toEqual(['researcher', 'writer', 'researcher']);
    keys.push('agent:writer:side');
    const own = await Promise.all(keys.map((k) => s.rpc<Usage>('sessions.usage', { sessionKey: k })));
    for (const u of own) {
      expect(u.inputTokens).toBeGreaterThan(0);
      expect(u.runs).toBe(1);
      expect(u.costUsd).toBe(cost(u));
      expect(u.unpricedModels).toEqual([]);
    }
    const root = own[0]!;
    expect(root.inputTokens).toBe(w.usage.inputTokens);
    expect(root.tree.sessions).toBe(5);
    expect(root.tree.inputTokens).toBe(own.reduce((a, u) => a + u.inputTokens, 0));
    expect(root.tree.outputTokens).toBe(own.reduce((a, u) => a + u.outputTokens, 0));
    expect(root.tree.costUsd).toBeCloseTo(own.reduce((a, u) => a + u.costUsd, 0), 9);
    // A delegate's tree is its own subtree.
    expect(own[2]!.tree.sessions).toBe(2);
    expect(own[2]!.tree.inputTokens).toBe(own[2]!.inputTokens + own[3]!.inputTokens);

    const metrics = await (await fetch(`${s.url}/api/metrics`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } })).text();
    expect(metrics).toMatch(/crosstalk_model_tokens_total\{agent="main",model="scripted",type="input"\} \d+/);
    expect(metrics).toMatch(/crosstalk_model_cost_usd_total\{agent="researcher",model="scripted"\} \d/);
  });

  it('an unknown price counts as 0 and says so; agent.wait then leaves costUsd out', async () => {
    const t = await startTestServer();
    try {
      const { runId } = await t.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:free', message: 'hi' });
      const w = await t.rpc<{ usage: Record<string, number> }>('agent.wait', { runId });
      expect(Object.keys(w.usage).sort()).toEqual(['inputTokens', 'outputTokens']);
      const u = await t.rpc<Usage>('sessions.usage', { sessionKey: 'agent:main:free' });
      expect(u).toMatchObject({ costUsd: 0, runs: 1, tree: { costUsd: 0, sessions: 1 }, unpricedModels: ['scripted'] });
      const bad = await t.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'sessions.usage', params: { sessionKey: 'agent:main:none' } });
      expect(bad.body.error.data.code).toBe('unknown_session');
    } finally {
      await t.close();
    }
  });
});
