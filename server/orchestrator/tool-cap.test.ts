// Tool calls per model step are capped (CONTRACT §3): the rest answer `limit_exceeded`; made-up tool names are not metric labels.
import { afterEach, describe, expect, it } from 'vitest';
import { startChildServer, startTestServer, TEST_TOKEN, type TestServer, tmpDataDir, until } from '../testing/harness';
import { MAX_TOOL_CALLS_PER_STEP, OVER_CAP_ANSWERED } from './model-step';

let s: TestServer | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

describe('tool calls per model step', () => {
  it('one message of 10,000 /tool lines runs 64 calls, the rest answer limit_exceeded; rows and metric series stay bounded', async () => {
    s = await startTestServer();
    const message = Array.from({ length: 10_000 }, (_, i) => `/tool x${i} {}`).join('\n');
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:main', message });
    const done = await s.rpc<{ status: string; response: string }>('agent.wait', { runId, timeoutMs: 60_000 });
    expect(done.status).toBe('ok');
    const lines = done.response.split('\n');
    // The scripted model answers one line per result it was given: the 64 that ran, 32 more that each answer
    // limit_exceeded, the last of which stands for the rest.
    const KEPT = MAX_TOOL_CALLS_PER_STEP + OVER_CAP_ANSWERED;
    expect(lines).toHaveLength(KEPT);
    for (const line of lines.slice(0, MAX_TOOL_CALLS_PER_STEP)) expect(line).toMatch(/^x\d+: .*"code":"invalid_request".*unknown tool x\d+/);
    const over = lines.slice(MAX_TOOL_CALLS_PER_STEP).map((l) => JSON.parse(l.slice(l.indexOf(': ') + 2)));
    for (const r of over) expect(r).toMatchObject({ status: 'error', error: { code: 'limit_exceeded' } });
    expect(over[0].error.message).toContain('this call was not run');
    expect(over.at(-1).error.message).toContain(`the ${10_000 - KEPT} after it were not run`);

    // Bounded rows: the whole transcript fits one page of 200 (user message, 96 calls, 96 results, the reply).
    const page = await s.rpc<{ messages: any[]; next_cursor: string | null }>('chat.history', { sessionKey: 'agent:main:main', includeTools: true, limit: 200 });
    expect(page.next_cursor).toBeNull();
    const rows = page.messages;
    expect(rows.filter((m) => m.kind === 'tool_call')).toHaveLength(KEPT);
    const results = rows.filter((m) => m.kind === 'tool_result');
    expect(results).toHaveLength(KEPT);
    expect(results.filter((m) => m.tool.result?.error?.code === 'limit_exceeded')).toHaveLength(OVER_CAP_ANSWERED);

    // Bounded series: the made-up names are one label, `unknown`.
    const metrics = await (await fetch(`${s.url}/api/metrics`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } })).text();
    const series = metrics.split('\n').filter((l) => l.startsWith('crosstalk_tool_calls_total{'));
    expect(series.some((l) => /tool="x\d+"/.test(l))).toBe(false);
    expect(series.filter((l) => l.includes('tool="unknown"')).map((l) => Number(l.split(' ').pop())).reduce((a, b) => a + b, 0)).toBe(MAX_TOOL_CALLS_PER_STEP + OVER_CAP_ANSWERED);
    expect(series.length).toBeLessThanOrEqual(2);
  });

  it('a known tool keeps its own label', async () => {
    s = await startTestServer();
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:main', message: '/tool sessions_list {}' });
    expect((await s.rpc<{ status: string }>('agent.wait', { runId })).status).toBe('ok');
    const metrics = await (await fetch(`${s.url}/api/metrics`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } })).text();
    expect(metrics).toMatch(/crosstalk_tool_calls_total\{tool="sessions_list",outcome="ok"\} 1/);
  });

  it('after a hard kill between writing the calls and their results, the re-drive answers limit_exceeded again (it does not run the call)', async () => {
    const dataDir = tmpDataDir();
    const a = await startChildServer({ dataDir, env: { CROSSTALK_FAILPOINTS: 'tool_calls.written' } });
    const message = Array.from({ length: MAX_TOOL_CALLS_PER_STEP + 2 }, (_, i) => `/tool x${i} {}`).join('\n');
    const { runId } = await a.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:main', message });
    expect(await a.exited).toBe(137);
    const b = await startChildServer({ dataDir });
    try {
      expect((await b.rpc<{ status: string }>('agent.wait', { runId, timeoutMs: 20_000 })).status).toBe('ok');
      const results = await until(async () => {
        const { messages } = await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:main', includeTools: true, limit: 200 });
        const r = messages.filter((m) => m.kind === 'tool_result');
        return r.length === MAX_TOOL_CALLS_PER_STEP + 2 ? r : null;
      });
      // Each call past the cap answers for itself.
      for (const name of [`x${MAX_TOOL_CALLS_PER_STEP}`, `x${MAX_TOOL_CALLS_PER_STEP + 1}`]) {
        expect(results.find((m) => m.tool.name === name).tool.result).toMatchObject({ status: 'error', error: { code: 'limit_exceeded', message: expect.stringContaining('this call was not run') } });
      }
    } finally {
      b.kill();
      await b.exited;
    }
  }, 30_000);
});
