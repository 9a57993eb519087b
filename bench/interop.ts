// `npx tsx bench/interop.ts`: what MCP and A2A add to a turn (figures for BENCHMARKS.md "Interop"), over real HTTP on loopback.
// Compares, on one in-process gateway (SQLite, scripted model): a plain turn; a turn calling a built-in tool; the same turn
// calling an MCP tool over stdio and over streamable HTTP; an A2A message/send; a turn on a remote A2A agent (an SDK server).
import path from 'node:path';
import { startMcpHttpServer } from '../server/mcp/testing/http-server';
import { startRemoteAgent } from '../server/a2a/testing/remote-agent';
import { startTestServer, TEST_TOKEN, type TestServer } from '../server/testing/harness';
import { summarize } from './lib/stats';

const N = Number(process.env.BENCH_INTEROP_N ?? 200);
const WARMUP = 20;

/** Runs the scenarios round-robin (one sample of each in turn), so load from other work on the machine hits them alike. */
async function sampleAll(scenarios: Array<[string, () => Promise<void>]>) {
  for (let i = 0; i < WARMUP; i++) for (const [, fn] of scenarios) await fn();
  const times = scenarios.map(() => [] as number[]);
  for (let i = 0; i < N; i++) {
    for (const [k, [, fn]] of scenarios.entries()) {
      const t = performance.now();
      await fn();
      times[k]!.push(performance.now() - t);
    }
  }
  return scenarios.map(([label], k) => [label, summarize(times[k]!)] as const);
}

async function turn(s: TestServer, sessionKey: string, message: string, expect: string) {
  const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey, message });
  const r = await s.rpc<{ status: string; response?: string }>('agent.wait', { runId });
  if (r.status !== 'ok' || !r.response?.includes(expect)) throw new Error(`unexpected: ${JSON.stringify(r)}`);
}

const mcpHttp = await startMcpHttpServer();
const remote = await startRemoteAgent();
const s = await startTestServer({
  config: {
    webhooks: { allowPrivateNetwork: true }, // the remote A2A agent is on loopback
    agents: [
      { id: 'main', tools: { 'mcp__files__*': 'auto', 'mcp__search__*': 'auto' } },
      { id: 'remote', a2a: { url: remote.url } },
    ],
    mcp: { servers: { files: { command: process.execPath, args: [path.join(import.meta.dirname, '../server/mcp/testing/stdio-server.mjs')] }, search: { url: mcpHttp.url } } },
  },
});
await s.rt.mcp.ready();
let n = 0;
const a2aSend = async () => {
  const res = await fetch(`${s.url}/a2a/main`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId: `m${n++}`, contextId: 'bench', parts: [{ kind: 'text', text: 'hi' }] } } }),
  });
  const body = await res.json();
  if (body.result?.status?.state !== 'completed') throw new Error(JSON.stringify(body));
};
try {
  const rows = await sampleAll([
    ['plain turn (agent + agent.wait)', () => turn(s, 'agent:main:bench-plain', 'hi', 'echo: hi')],
    ['turn with a built-in tool (sessions_list)', () => turn(s, 'agent:main:bench-builtin', '/tool sessions_list {"limit":1}', 'sessions_list:')],
    ['turn with an MCP tool over stdio', () => turn(s, 'agent:main:bench-stdio', '/tool mcp__files__echo {"text":"x"}', 'echo x')],
    ['turn with an MCP tool over streamable HTTP', () => turn(s, 'agent:main:bench-http', '/tool mcp__search__lookup {"word":"x"}', 'x: a word')],
    ['A2A message/send (blocking), one turn', a2aSend],
    ['turn on a remote A2A agent (SDK server, streaming)', () => turn(s, 'agent:remote:bench', 'hi', 'remote[')],
  ]);
  const load = (await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' / ');
  console.log(`load average after the run (1 / 5 / 15 min): ${load}`);
  console.log(`| scenario (n=${N}) | p50 | p95 | p99 |\n| --- | --- | --- | --- |`);
  for (const [label, st] of rows) console.log(`| ${label} | ${st.p50.toFixed(2)} ms | ${st.p95.toFixed(2)} ms | ${st.p99.toFixed(2)} ms |`);
} finally {
  await s.close();
  await mcpHttp.close();
  await remote.close();
}
