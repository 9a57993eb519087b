// Fetch-style handlers (a Request in, a Response out) on bare node:http: the request built from the socket, the
// response streamed back with backpressure, a JSON body gzipped when the client takes it (as Next would).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { gzip as gzipCb } from 'node:zlib';

// On libuv's thread pool: a room's page of history compressed on the event loop held it 1–3 ms.
const gzip = promisify(gzipCb);

/** The request as a fetch Request; its signal aborts when the client goes away. */
function toRequest(req: IncomingMessage, res: ServerResponse): { request: Request; signal: AbortSignal } {
  const ac = new AbortController();
  res.on('close', () => ac.abort());
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  // The URL's host is never the client's Host header (same-origin checks read the headers themselves).
  const request = new Request(`http://127.0.0.1${req.url}`, {
    method: req.method,
    headers: req.headers as Record<string, string>,
    body: hasBody ? (Readable.toWeb(req) as ReadableStream) : undefined,
    // @ts-expect-error node's fetch needs duplex for streamed bodies
    duplex: 'half',
    signal: ac.signal,
  });
  return { request, signal: ac.signal };
}

/** Resolves when the socket can take more, or when the client went away. */
function drained(res: ServerResponse, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.once('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

const GZIP_MIN_BYTES = 1024;

/** Writes a fetch Response to node's response; `gzip` compresses a JSON body for a client that accepts it. */
async function writeResponse(req: IncomingMessage, res: ServerResponse, response: Response, signal: AbortSignal, o: { gzip?: boolean } = {}): Promise<void> {
  const headers: Record<string, string | string[]> = Object.fromEntries(response.headers);
  // Answered before its body was read to the end (a 413 over the cap): the rest of it would be read as the next
  // request on a kept-alive socket, and the client's next request there was reset. The socket closes instead.
  if (!req.complete) headers.connection = 'close';
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  if (!response.body) {
    res.writeHead(response.status, headers);
    return void res.end();
  }
  // (Not a streamed JSON-lines answer: it would wait for its end.)
  if (o.gzip && /^application\/json\b/.test(response.headers.get('content-type') ?? '') && !req.headers['trpc-accept']) {
    let body = Buffer.from(await response.arrayBuffer());
    if (body.length >= GZIP_MIN_BYTES && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) {
      body = await gzip(body, { level: 4 });
      headers['content-encoding'] = 'gzip';
      headers.vary = headers.vary ? `${headers.vary}, Accept-Encoding` : 'Accept-Encoding';
    }
    headers['content-length'] = String(body.length);
    res.writeHead(response.status, headers);
    return void res.end(body);
  }
  res.writeHead(response.status, headers);
  res.flushHeaders();
  const reader = response.body.getReader();
  signal.addEventListener('abort', () => void reader.cancel().catch(() => undefined));
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    // Backpressure: a paused client stops the reads (and the event stream behind them) instead of growing a buffer.
    if (!res.write(value)) await drained(res, signal);
  }
  res.end();
}

/** Serves one request with a fetch-style handler (a 500 when it throws). */
export function serveFetch(req: IncomingMessage, res: ServerResponse, handler: (r: Request) => Promise<Response>, o: { gzip?: boolean } = {}): void {
  const fail = (e: unknown) => {
    if (!res.headersSent) res.writeHead(500);
    res.end(String(e));
  };
  let built: ReturnType<typeof toRequest>;
  try {
    built = toRequest(req, res);
  } catch (e) {
    return fail(e); // e.g. a request target that makes no URL
  }
  const { request, signal } = built;
  handler(request)
    .then((response) => writeResponse(req, res, response, signal, o))
    .catch(fail);
}
