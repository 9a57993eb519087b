// Traces: spans exported over OTLP/HTTP to a loopback receiver form one trace across a delegate, an async sessions_send
// with its callback turn, and a webhook (whose request carries the traceparent header).
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { Telemetry, tracesUrl } from './tracing';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Array<{ key: string; value: { stringValue?: string; intValue?: string | number } }>;
}

let receiver: Server;
let base = '';
const spans: OtlpSpan[] = [];
const hooks: Array<{ headers: IncomingMessage['headers']; body: string }> = [];
let s: TestServer;

const read = (req: IncomingMessage) => new Promise<string>((r) => {
  let b = '';
  req.on('data', (c) => (b += c));
  req.on('end', () => r(b));
});

beforeAll(async () => {
  receiver = createServer(async (req, res) => {
    const body = await read(req);
    if (req.url === '/v1/traces') {
      const msg = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }> };
      for (const rs of msg.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
    } else if (req.url === '/hook') hooks.push({ headers: req.headers, body });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = base;
  s = await startTestServer({ config: { webhooks: { allowPrivateNetwork: true }, agents: [{ id: 'main', tools: { exec: 'ask' } }, { id: 'researcher' }, { id: 'writer' }] } });
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
});
afterAll(async () => {
  await s?.close();
  await new Promise((r) => receiver.close(r));
});

const attr = (sp: OtlpSpan, key: string) => {
  const v = sp.attributes.find((a) => a.key === key)?.value;
  return v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : undefined);
};

describe('tracing', () => {
  it('is off without an endpoint and reads the standard variables', async () => {
    const off = await Telemetry.create({});
    expect(off.enabled).toBe(false);
    expect(off.start('x', undefined)).toBeUndefined();
    expect((await Telemetry.create({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })).enabled).toBe(true);
    expect(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })).toBe('http://c:4318/v1/traces');
    expect(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t/x' })).toBe('http://t/x');
  });

  it('one trace across a delegate, an async sessions_send and its callback turn, and a webhook', async () => {
    const key = 'agent:main:traced';
    const message = [
      '/tool delegate_agent {"agent_id":"researcher","prompt":"look it up"}',
      `/tool sessions_send ${JSON.stringify({ sessionKey: 'agent:writer:main', message: '/sleep 300\n/reply written', mode: 'async', webhook: { url: `${base}/hook` } })}`,
    ].join('\n');
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message });
    expect(await s.rpc('agent.wait', { runId })).toMatchObject({ status: 'ok' });
    // The writer answers after the main run has ended: its callback is a turn of its own.
    const callbackRunId = await until(async () => (await s.rt.store.db.selectFrom('runs').select(['id', 'status']).where('session_key', '=', key).where('id', '!=', runId).executeTakeFirst())?.id);
    expect((await s.rt.store.getRun(callbackRunId))!.merged_into).toBeNull();
    expect(await s.rpc('agent.wait', { runId: callbackRunId })).toMatchObject({ status: 'ok' });
    await until(() => hooks.length > 0);
    await s.rt.telemetry.flush();

    const runSpan = (id: string) => spans.find((sp) => sp.name.startsWith('run ') && attr(sp, 'crosstalk.run_id') === id)!;
    const main = runSpan(runId);
    expect(main).toBeDefined();
    expect(main.parentSpanId ?? '').toBe('');
    // Every span of the request is in one trace.
    const traceIds = new Set(spans.map((sp) => sp.traceId));
    expect([...traceIds]).toEqual([main.traceId]);

    const toolSpan = (name: string) => spans.find((sp) => sp.name === `tool ${name}` && sp.parentSpanId === main.spanId)!;
    const delegateTool = toolSpan('delegate_agent');
    const sendTool = toolSpan('sessions_send');
    const delegateRunId = (await s.rt.store.db.selectFrom('runs').select('id').where('session_key', 'like', 'agent:researcher:subagent:%').executeTakeFirstOrThrow()).id;
    const writerRunId = (await s.rt.store.db.selectFrom('runs').select('id').where('session_key', '=', 'agent:writer:main').executeTakeFirstOrThrow()).id;
    expect(runSpan(delegateRunId).parentSpanId).toBe(delegateTool.spanId);
    const writer = runSpan(writerRunId);
    expect(writer.parentSpanId).toBe(sendTool.spanId);
    // The callback turn continues from the target run it reports.
    expect(runSpan(callbackRunId).parentSpanId).toBe(writer.spanId);
    // The webhook: a client span under the target run, whose context the receiver got as `traceparent`.
    const hookSpan = spans.find((sp) => sp.name === 'webhook POST')!;
    expect(hookSpan.parentSpanId).toBe(writer.spanId);
    expect(hooks[0]!.headers.traceparent).toBe(`00-${main.traceId}-${hookSpan.spanId}-01`);
    // Model steps carry their tokens.
    const step = spans.find((sp) => sp.name === 'chat scripted' && sp.parentSpanId === main.spanId)!;
    expect(attr(step, 'gen_ai.usage.input_tokens')).toBeGreaterThan(0);
    expect(attr(step, 'gen_ai.usage.output_tokens')).toBeGreaterThan(0);
    // The run's trace id is in its lifecycle start event (the event inspector shows it).
    await s.rt.bus.drain();
    const start = await s.rt.store.db.selectFrom('events').select('data').where('run_id', '=', runId).where('seq', '=', 1).executeTakeFirstOrThrow();
    expect(JSON.parse(start.data)).toMatchObject({ phase: 'start', traceId: main.traceId });
  });

  it('an approval wait is a span under its tool call, from the request to the decision', async () => {
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:approve', message: '/tool exec {"command":"true"}' });
    const approval = await until(async () => (await s.rpc<{ approvals: Array<{ approvalId: string; runId: string }> }>('approvals.list', {})).approvals.find((a) => a.runId === runId));
    await new Promise((r) => setTimeout(r, 20));
    await s.rpc('approvals.resolve', { approvalId: approval.approvalId, decision: 'allow_once' });
    expect(await s.rpc('agent.wait', { runId })).toMatchObject({ status: 'ok' });
    await s.rt.telemetry.flush();
    const tool = await until(() => spans.find((sp) => sp.name === 'tool exec'));
    const wait = spans.find((sp) => sp.name === 'approval exec')!;
    expect(wait.parentSpanId).toBe(tool.spanId);
    expect(attr(wait, 'crosstalk.approval.decision')).toBe('allowed');
    const nanos = (sp: OtlpSpan) => BigInt((sp as unknown as { endTimeUnixNano: string }).endTimeUnixNano) - BigInt((sp as unknown as { startTimeUnixNano: string }).startTimeUnixNano);
    expect(nanos(wait)).toBeGreaterThan(0n);
  });

  it('a delegate follow-up joins the trace of the run that asked for it', async () => {
    const key = 'agent:main:traced';
    const conversation = (await s.rt.store.db.selectFrom('sessions').select('key').where('parent_key', '=', key).executeTakeFirstOrThrow()).key;
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: `/tool delegate_agent ${JSON.stringify({ conversation_id: conversation, prompt: 'and more' })}` });
    expect(await s.rpc('agent.wait', { runId })).toMatchObject({ status: 'ok' });
    await s.rt.telemetry.flush();
    const runSpan = (id: string) => spans.find((sp) => sp.name.startsWith('run ') && attr(sp, 'crosstalk.run_id') === id);
    const asking = await until(() => runSpan(runId));
    const followUpRunId = (await s.rt.store.db.selectFrom('runs').select('id').where('session_key', '=', conversation).orderBy('created_at', 'desc').executeTakeFirstOrThrow()).id;
    const followUp = await until(() => runSpan(followUpRunId));
    const tool = spans.find((sp) => sp.name === 'tool delegate_agent' && sp.parentSpanId === asking.spanId)!;
    expect(followUp.traceId).toBe(asking.traceId);
    expect(followUp.parentSpanId).toBe(tool.spanId);
  });
});
