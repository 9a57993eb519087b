// MCP results as the server meant them (issue 23 item 3): progress notifications become `tool` `update` events on the
// card, and the run's trace context travels in the request's `_meta.traceparent`; against a real stdio SDK server.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { settledEvents, startTestServer, type TestServer, tmpDataDir, until } from '../testing/harness';

const STDIO_SERVER = path.join(import.meta.dirname, 'testing', 'stdio-server.mjs');

let s: TestServer | undefined;
let sink: Server | undefined;
afterEach(async () => {
  await s?.close();
  if (sink) await new Promise((r) => sink!.close(r));
  s = sink = undefined;
});

const config = (log: string) => ({
  agents: [{ id: 'main', tools: { 'mcp__files__*': 'auto' } }],
  mcp: { servers: { files: { command: process.execPath, args: [STDIO_SERVER], env: { MCP_TEST_LOG: log } } } },
});

async function run(srv: TestServer, message: string) {
  const { runId } = await srv.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:main', message });
  const done = await srv.rpc<{ status: string; response?: string }>('agent.wait', { runId, timeoutMs: 20_000 });
  return { runId, ...done };
}

const events = async (srv: TestServer, runId: string) =>
  (await settledEvents(srv.rt, { runId })).map((e) => ({ stream: e.stream, data: JSON.parse(e.data) }));

describe('MCP progress and trace context', () => {
  it('asks for progress and turns each notification into a tool update event on the card', async () => {
    const log = path.join(tmpDataDir(), 'mcp.log');
    s = await startTestServer({ config: config(log) });
    await s.rt.mcp.ready();
    const done = await run(s, '/tool mcp__files__progress {}');
    expect(done.response).toContain('"text":"progressed"');
    const evs = await events(s, done.runId);
    const start = evs.find((e) => e.stream === 'tool' && e.data.phase === 'start');
    const updates = evs.filter((e) => e.stream === 'tool' && e.data.phase === 'update');
    expect(updates.map((u) => u.data)).toEqual([1, 2, 3].map((i) => ({ phase: 'update', name: 'mcp__files__progress', callId: start!.data.callId, progress: { progress: i, total: 3, message: `step ${i}` } })));
  });

  it("sends the tool call's traceparent in _meta, in the run's trace", async () => {
    // Tracing on: spans go to a loopback sink.
    sink = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('{}'));
    });
    await new Promise<void>((r) => sink!.listen(0, '127.0.0.1', r));
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
    try {
      s = await startTestServer({ config: config(path.join(tmpDataDir(), 'mcp.log')) });
    } finally {
      delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    }
    await s.rt.mcp.ready();
    const done = await run(s, '/tool mcp__files__trace {}');
    const traceId = (await until(async () => (await events(s!, done.runId)).find((e) => e.stream === 'lifecycle' && e.data.phase === 'start')))!.data.traceId;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    const sent = /traceparent (\S+)/.exec(done.response!)?.[1];
    expect(sent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-0[01]"?`));
  });
});
