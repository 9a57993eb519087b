// Which call a server's question is asked on (probe P): exactly the asking call over streamable HTTP; over stdio (no
// link on the wire) never a call of another session: it waits until the calls in flight are one session's.
import path from 'node:path';
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../testing/harness';
import type { McpCallInfo } from './call-info';
import { linkingFetch, WireLinks } from './call-routing';
import { McpConnection } from './connection';
import { type ElicitHttpServer, startElicitHttpServer } from './testing/elicit-http-server';

const STDIO_SERVER = path.join(import.meta.dirname, 'testing', 'elicit-stdio-server.mjs');

type Asked = { call: McpCallInfo | undefined; message: string; endedThen: boolean | undefined };

let conn: McpConnection | undefined;
let http: ElicitHttpServer | undefined;
afterEach(async () => {
  await conn?.stop();
  await http?.close();
  conn = http = undefined;
});

/** A connection whose questions are answered by `answer` (given what was asked), recorded in `asked`. */
async function connect(cfg: { command: string; args: string[] } | { url: string }, answer: (a: Asked) => Promise<ElicitResult> | ElicitResult = () => ({ action: 'accept', content: { sure: true } })) {
  const asked: Asked[] = [];
  const warnings: string[] = [];
  const stderr: string[] = [];
  const sink = (line: string) => {
    const o = JSON.parse(line) as { level: number; msg: string; stderr?: string };
    if (o.stderr) stderr.push(o.stderr);
    if (o.level >= 40) warnings.push(o.msg);
  };
  conn = new McpConnection('srv', cfg, {
    log: pino({ level: 'info' }, { write: sink }),
    reconnectBaseMs: 100,
    reconnectMaxMs: 1000,
    onTools: () => undefined,
    onState: () => undefined,
    onElicit: async (call, params: ElicitRequest['params']) => {
      const a = { call, message: (params as { message: string }).message, endedThen: call?.ended?.aborted };
      asked.push(a);
      return answer(a);
    },
  });
  await conn.start();
  expect(conn.state).toBe('ready');
  return { conn, asked, warnings, stderr };
}

const caller = (sessionKey: string, tool: string, signal = new AbortController().signal): McpCallInfo => ({ runId: `run-${sessionKey}`, sessionKey, callId: `call-${sessionKey}-${tool}`, tool, signal });
const text = (r: { content?: unknown }) => JSON.stringify(r.content);

describe('an MCP question asked during one of several calls in flight', () => {
  it("over streamable HTTP is asked on exactly the call whose response stream carried it, while another session's call is still in flight", async () => {
    http = await startElicitHttpServer();
    const { conn, asked } = await connect({ url: http.url });
    const stopA = new AbortController();
    const A = caller('agent:main:a', 'slow', stopA.signal);
    const B = caller('agent:main:b', 'confirm');
    const a = conn.call('slow', { ms: 120_000 }, { signal: stopA.signal, caller: A });
    const b = await conn.call('confirm', { message: 'for B' }, { signal: new AbortController().signal, caller: B });
    // Before: asked on A's call (the oldest in flight not asking), its item on A's session, cancelled when A ended.
    expect(asked).toEqual([{ call: B, message: 'for B', endedThen: false }]);
    expect(text(b)).toContain('\\"sure\\":true');
    // A's call is still in flight: the question did not wait for it.
    expect(A.ended?.aborted).toBe(false);
    stopA.abort();
    await a.catch(() => undefined);
  });

  it('over streamable HTTP, two sessions asking at once: each question on its own call', async () => {
    http = await startElicitHttpServer();
    // Each answer names the session it was asked on; the tool answers what it got.
    const { conn, asked } = await connect({ url: http.url }, async (a) => {
      await until(() => asked.length === 2); // both questions are out before either is answered
      return { action: 'accept', content: { sure: a.call?.sessionKey === 'agent:main:b' } };
    });
    const A = caller('agent:main:a', 'confirm');
    const B = caller('agent:main:b', 'confirm');
    const [a, b] = await Promise.all([
      conn.call('confirm', { message: 'for A' }, { signal: new AbortController().signal, caller: A }),
      conn.call('confirm', { message: 'for B' }, { signal: new AbortController().signal, caller: B }),
    ]);
    expect(Object.fromEntries(asked.map((x) => [x.message, x.call?.sessionKey]))).toEqual({ 'for A': 'agent:main:a', 'for B': 'agent:main:b' });
    expect(text(a)).toContain('\\"sure\\":false');
    expect(text(b)).toContain('\\"sure\\":true');
  });

  it("over stdio (no link on the wire) waits while another session's call is in flight, then is asked on the one session left", async () => {
    const { conn, asked } = await connect({ command: process.execPath, args: [STDIO_SERVER] });
    const A = caller('agent:main:a', 'slow');
    const B = caller('agent:main:b', 'confirm');
    const a = conn.call('slow', { ms: 1500 }, { signal: new AbortController().signal, caller: A });
    const b = await conn.call('confirm', {}, { signal: new AbortController().signal, caller: B });
    // Before: asked on A's call at once (A's session saw B's question, and A's end cancelled it).
    expect(asked.map((x) => x.call)).toEqual([B]);
    // It was asked once A's call was over: never while it could have been A's.
    expect(A.ended?.aborted).toBe(true);
    expect(text(b)).toContain('\\"sure\\":true');
    expect(text(await a)).toContain('slow done');
  });

  it('over streamable HTTP, a question on no call stream (the standalone stream) waits like one over stdio', async () => {
    http = await startElicitHttpServer();
    const { conn, asked } = await connect({ url: http.url });
    const A = caller('agent:main:a', 'slow');
    const B = caller('agent:main:b', 'confirm_unlinked');
    const a = conn.call('slow', { ms: 1500 }, { signal: new AbortController().signal, caller: A });
    const b = await conn.call('confirm_unlinked', {}, { signal: new AbortController().signal, caller: B });
    expect(asked.map((x) => [x.call, x.endedThen])).toEqual([[B, false]]);
    expect(A.ended?.aborted).toBe(true);
    expect(text(b)).toContain('\\"sure\\":true');
    await a;
  });

  it("over stdio, one session's two calls: asked on that session at once, and it lives until both calls are over", async () => {
    const one = caller('agent:main:a', 'slow');
    const two = caller('agent:main:a', 'confirm');
    let slowDone: Promise<unknown> | undefined;
    const { conn, asked } = await connect({ command: process.execPath, args: [STDIO_SERVER] }, async (a) => {
      await slowDone; // the other call of the session ends while the question waits
      return { action: 'accept', content: { sure: !a.call?.ended?.aborted } };
    });
    slowDone = conn.call('slow', { ms: 1000 }, { signal: new AbortController().signal, caller: one });
    const b = await conn.call('confirm', {}, { signal: new AbortController().signal, caller: two });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ call: { sessionKey: 'agent:main:a' }, endedThen: false });
    // Before: asked on the slow call (the oldest), and cancelled when it ended; the asking call got `cancel`.
    expect(text(b)).toContain('\\"sure\\":true');
  });

  it("over stdio, a question waiting while its call is cancelled is cancelled with it: never asked on the other session's call left", async () => {
    const { conn, asked, warnings } = await connect({ command: process.execPath, args: [STDIO_SERVER] });
    const stopB = new AbortController();
    const A = caller('agent:main:a', 'slow');
    const B = caller('agent:main:b', 'confirm', stopB.signal);
    const a = conn.call('slow', { ms: 2500 }, { signal: new AbortController().signal, caller: A });
    const b = conn.call('confirm', {}, { signal: stopB.signal, caller: B });
    await until(() => warnings.some((w) => w.startsWith('mcp elicitation waits')));
    stopB.abort(); // B's run is cancelled: its question is left behind on the server, and A's call is the only one left
    await expect(b).rejects.toThrow();
    await until(() => warnings.some((w) => w.startsWith('mcp elicitation cancelled')));
    expect(text(await a)).toContain('slow done');
    expect(asked).toEqual([]);
  });

  it("over stdio, a question that comes just after its call was cancelled is not asked on another session's call in flight", async () => {
    const { conn, asked, warnings, stderr } = await connect({ command: process.execPath, args: [STDIO_SERVER] });
    const stopA = new AbortController();
    const stopB = new AbortController();
    const A = caller('agent:main:a', 'slow', stopA.signal);
    const B = caller('agent:main:b', 'ask_when_cancelled', stopB.signal);
    const a = conn.call('slow', { ms: 120_000 }, { signal: stopA.signal, caller: A });
    const b = conn.call('ask_when_cancelled', {}, { signal: stopB.signal, caller: B });
    await until(() => stderr.includes('waiting to be cancelled'));
    stopB.abort();
    await expect(b).rejects.toThrow();
    // The server asks once it has B's cancellation: A's call is the only one in flight then.
    expect(await until(() => stderr.find((l) => l.startsWith('late ')))).toBe('late answer {"action":"cancel"}');
    expect(warnings.some((w) => w.startsWith('mcp elicitation cancelled'))).toBe(true);
    expect(asked).toEqual([]);
    stopA.abort();
    await a.catch(() => undefined);
  });

  it("over stdio, two sessions asking at once: no call can end to tell them apart, so one is cancelled and the other is asked on the session whose it is", async () => {
    const { conn, asked } = await connect({ command: process.execPath, args: [STDIO_SERVER] });
    const A = caller('agent:main:a', 'confirm');
    const B = caller('agent:main:b', 'confirm');
    const [a, b] = await Promise.all([
      conn.call('confirm', {}, { signal: new AbortController().signal, caller: A }),
      conn.call('confirm', {}, { signal: new AbortController().signal, caller: B }),
    ]);
    expect(asked).toHaveLength(1);
    const [answered, cancelled] = asked[0]!.call === A ? [a, b] : [b, a];
    expect(text(answered)).toContain('\\"sure\\":true');
    expect(text(cancelled)).toContain('\\"action\\":\\"cancel\\"');
  });
});

describe('the link from a server request to the call whose response stream carried it', () => {
  it('is read from the event stream however it is cut and whatever its line ends, before the reader gets the event', async () => {
    const call = caller('agent:main:a', 'confirm');
    const params = { name: 'confirm', arguments: {} };
    const links = new WireLinks();
    links.expect(params, call);
    links.sent({ jsonrpc: '2.0', id: 7, method: 'tools/call', params });
    const events = [
      'event: message\r\nid: 1\r\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\r\n\r\n',
      // A request's data over two lines, then one more request with LF line ends and one with CR.
      'data: {"jsonrpc":"2.0","id":"s-1",\ndata: "method":"elicitation/create","params":{}}\n\n',
      'data: {"jsonrpc":"2.0","id":2,"method":"elicitation/create","params":{"message":"é😀"}}\r\r',
      'data: {"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"\\"method\\""}]}}\n\n',
    ];
    const bytes = new TextEncoder().encode(events.join(''));
    const seenByReader: Array<McpCallInfo | undefined> = [];
    const f = linkingFetch(
      async () =>
        new Response(
          new ReadableStream({
            start(c) {
              // Cut every 5 bytes: a line end, an event end and a character's UTF-8 bytes fall across chunks.
              for (let i = 0; i < bytes.length; i += 5) c.enqueue(bytes.slice(i, i + 5));
              c.close();
            },
          }),
          { headers: { 'content-type': 'text/event-stream' } },
        ),
      () => links,
    );
    const res = await f('http://x/mcp', { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params }) });
    const reader = res.body!.getReader();
    let text = '';
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      // Once the reader has the whole request event (its blank line), its link is known.
      if (!seenByReader.length && text.includes('"params":{}}\n\n')) seenByReader.push(links.callFor('s-1'));
    }
    expect(text).toBe(events.join(''));
    expect(seenByReader[0]).toBe(call);
    expect(links.callFor(2)).toBe(call);
    expect(links.callFor(1)).toBeUndefined(); // a notification is no request
    expect(links.callFor(7)).toBeUndefined(); // the response is none either
    links.forget(call);
    expect(links.callFor('s-1')).toBeUndefined();
  });
});
