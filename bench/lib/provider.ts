// The provider-path turn: the same sequential turns as the scripted one, on a session whose model is `openai:` against the loopback OpenAI-wire fake.
import { startFakeOpenAI, type FakeOpenAIServer } from '../../server/models/testing/fake-openai-server';
import { RpcClient, turn } from './http';
import { summarize, type Summary } from './stats';

export const BENCH_OPENAI_MODEL = 'openai:gpt-bench';

/**
 * The fake model: instant, real streaming format (role chunk, three text deltas, finish, usage, [DONE]).
 * It answers `echo: <last user text>` like the scripted model, so both turns carry the same text.
 * It runs in the bench process, not in the server: its own cost is not in the server's figures.
 */
export async function startBenchModel(): Promise<FakeOpenAIServer> {
  const fake = await startFakeOpenAI();
  fake.setHandler((body) => {
    const last = [...body.messages].reverse().find((m) => m.role === 'user');
    const content = typeof last?.content === 'string' ? last.content : Array.isArray(last?.content) ? (last.content as Array<{ text?: string }>).map((p) => p.text ?? '').join('') : '';
    return { text: `echo: ${content}`, usage: { promptTokens: 200, completionTokens: 5 } };
  });
  return fake;
}

/** The environment the server needs to reach the fake (`openai:` models read these). */
export const benchModelEnv = (fake: FakeOpenAIServer): Record<string, string> => ({ OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: 'sk-bench' });

/**
 * Sequential turns on one session switched to the OpenAI-wire model with `sessions.patch`, each
 * followed by the same turn on a scripted session, so both see the same machine load (the ratio is
 * taken pair by pair). Same counts as the scripted turn, so both contexts are as full (newest 200 rows).
 */
export async function providerTurnRoundTrip(
  rpc: RpcClient,
  o: { warmup: number; turns: number },
): Promise<Summary & { errors: number; firstError?: string; scriptedPair: Summary; ratioP50: number }> {
  const sessionKey = 'agent:main:bench-provider';
  const pairKey = 'agent:main:bench-provider-pair';
  await turn(rpc, sessionKey, 'create the session'); // sessions.patch needs an existing session
  await turn(rpc, pairKey, 'create the session');
  await rpc.call('sessions.patch', { sessionKey, model: BENCH_OPENAI_MODEL });
  let errors = 0;
  let firstError: string | undefined;
  const check = (r: Awaited<ReturnType<typeof turn>>, i: number) => {
    if (r.status === 'ok' && r.response === `echo: ping ${i}`) return;
    errors++;
    firstError ??= `${r.status}: ${r.error ?? r.response ?? ''}`;
  };
  for (let i = 0; i < o.warmup; i++) {
    check(await turn(rpc, sessionKey, `ping ${i}`), i);
    await turn(rpc, pairKey, `ping ${i}`);
  }
  const provider: number[] = [];
  const scripted: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < o.turns; i++) {
    let t0 = performance.now();
    const r = await turn(rpc, sessionKey, `ping ${i}`);
    provider.push(performance.now() - t0);
    check(r, i);
    t0 = performance.now();
    await turn(rpc, pairKey, `ping ${i}`);
    scripted.push(performance.now() - t0);
    ratios.push(provider.at(-1)! / scripted.at(-1)!);
  }
  return { ...summarize(provider), errors, ...(firstError ? { firstError } : {}), scriptedPair: summarize(scripted), ratioP50: summarize(ratios).p50 };
}
