// A scripted OpenAI-compatible chat-completions server on loopback, speaking the real wire format, for tests.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeToolCall {
  name: string;
  args: Record<string, unknown> | string;
  /** Defaults to a generated `call_<n>` id. */
  id?: string;
}

/** One scripted answer: a completion, or an HTTP error. */
export type FakeReply =
  | {
      text?: string;
      toolCalls?: FakeToolCall[];
      usage?: { promptTokens: number; completionTokens: number };
      finishReason?: string;
      /** Wait this long before answering (e.g. to test aborts). */
      delayMs?: number;
      /** After the text deltas, send this error event and end the stream (streaming only). */
      errorAfterText?: string;
      /** Stream the text word by word with this pause between deltas (streaming only): a slow model. */
      chunkDelayMs?: number;
      /** With `chunkDelayMs`: awaited before the delta of word `i` (a test holds the stream at a word it chooses). */
      beforeChunk?: (i: number) => unknown;
    }
  | { status: number; message?: string; delayMs?: number }
  /** A 200 event stream whose first event is an error object, as some servers do mid-stream. */
  | { streamError: string; delayMs?: number };

export type FakeHandler = (body: ChatRequestBody, index: number) => FakeReply | Promise<FakeReply>;

/** The parts of a chat-completions request tests usually look at; the rest is kept as sent. */
export interface ChatRequestBody {
  model: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages: Array<{ role: string; content?: unknown; tool_calls?: unknown[]; tool_call_id?: string; [k: string]: unknown }>;
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  [key: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: ChatRequestBody;
}

export interface FakeOpenAIServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** `http://127.0.0.1:<port>/v1` — what OPENAI_BASE_URL / CROSSTALK_COMPAT_BASE_URL should be. */
  baseURL: string;
  /** Every chat-completions request received, in order. */
  requests: RecordedRequest[];
  /** Queues answers, used in order; once the queue is empty the handler (if any) answers. */
  enqueue(...replies: FakeReply[]): void;
  /** Answers requests the queue does not cover. */
  setHandler(handler: FakeHandler | null): void;
  close(): Promise<void>;
}

export async function startFakeOpenAI(): Promise<FakeOpenAIServer> {
  const queue: FakeReply[] = [];
  const requests: RecordedRequest[] = [];
  let handler: FakeHandler | null = null;
  let callCounter = 0;

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendError(res, 500, `fake server error: ${(err as Error).message}`);
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    if (req.method !== 'POST' || !/^(\/v1)?\/chat\/completions$/.test(path)) {
      sendError(res, 404, `fake server: no route for ${req.method} ${path}`);
      return;
    }
    let body: ChatRequestBody;
    try {
      body = JSON.parse(await readBody(req)) as ChatRequestBody;
    } catch {
      sendError(res, 400, 'fake server: request body is not JSON');
      return;
    }
    const index = requests.length;
    requests.push({ method: req.method, path, headers: req.headers, body });

    const reply = queue.shift() ?? (handler ? await handler(body, index) : undefined);
    if (!reply) {
      // Loud on purpose: a test that sends more requests than it scripted should fail visibly.
      sendError(res, 500, `fake server: no scripted reply for request #${index + 1}`);
      return;
    }
    if (reply.delayMs) await delay(reply.delayMs);
    if ('status' in reply) {
      sendError(res, reply.status, reply.message ?? `scripted failure (HTTP ${reply.status})`);
      return;
    }
    if ('streamError' in reply) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(`data: ${JSON.stringify({ error: { message: reply.streamError, type: 'server_error', param: null, code: null } })}\n\n`);
      res.end();
      return;
    }
    const toolCalls = (reply.toolCalls ?? []).map((c) => ({
      id: c.id ?? `call_${++callCounter}`,
      name: c.name,
      args: typeof c.args === 'string' ? c.args : JSON.stringify(c.args),
    }));
    const text = reply.text ?? '';
    const finishReason = reply.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop');
    const usage = {
      prompt_tokens: reply.usage?.promptTokens ?? 11,
      completion_tokens: reply.usage?.completionTokens ?? 7,
      total_tokens: (reply.usage?.promptTokens ?? 11) + (reply.usage?.completionTokens ?? 7),
    };
    const id = `chatcmpl-fake-${index + 1}`;
    const created = Math.floor(Date.now() / 1000);
    const model = body.model;

    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created,
          model,
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: text === '' && toolCalls.length > 0 ? null : text,
                ...(toolCalls.length > 0
                  ? { tool_calls: toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.args } })) }
                  : {}),
              },
              finish_reason: finishReason,
            },
          ],
          usage,
        }),
      );
      return;
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`);
    const delta = (d: Record<string, unknown>, finish: string | null = null) => chunk([{ index: 0, delta: d, finish_reason: finish }]);

    delta({ role: 'assistant', content: '' });
    if (reply.chunkDelayMs) {
      for (const [i, piece] of (text.match(/\S+\s*/g) ?? []).entries()) {
        await reply.beforeChunk?.(i);
        delta({ content: piece });
        await delay(reply.chunkDelayMs);
      }
    } else for (const piece of splitPieces(text, 3)) delta({ content: piece });
    if (reply.errorAfterText !== undefined) {
      res.write(`data: ${JSON.stringify({ error: { message: reply.errorAfterText, type: 'server_error', param: null, code: null } })}\n\n`);
      res.end();
      return;
    }
    toolCalls.forEach((call, i) => {
      // Real servers send id, type and name first, then the arguments in fragments.
      delta({ tool_calls: [{ index: i, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] });
      for (const piece of splitPieces(call.args, 3)) delta({ tool_calls: [{ index: i, function: { arguments: piece } }] });
    });
    delta({}, finishReason);
    if (body.stream_options?.include_usage) chunk([], { usage });
    res.write('data: [DONE]\n\n');
    res.end();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    baseURL: `${url}/v1`,
    requests,
    enqueue: (...replies) => void queue.push(...replies),
    setHandler: (h) => void (handler = h),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function sendError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: null } }));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Splits a string into up to `count` non-empty pieces that concatenate back to it. */
function splitPieces(text: string, count: number): string[] {
  // Code points, not UTF-16 units, so a piece never ends inside a surrogate pair.
  const chars = Array.from(text);
  if (chars.length === 0) return [];
  const size = Math.max(1, Math.ceil(chars.length / count));
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
