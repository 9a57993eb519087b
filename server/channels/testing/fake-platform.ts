// A loopback HTTP fake for channel platform APIs: records every request, answers from a queue first, then from a handler.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  /** JSON or form bodies parsed; anything else as text. */
  body: any;
  raw: string;
}

export interface FakeReply {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type FakeHandler = (req: FakeRequest) => FakeReply | Promise<FakeReply>;

export interface FakePlatform {
  url: string;
  requests: FakeRequest[];
  /** Answers used in order before the handler (each for one request whose path matches, when a matcher is given). */
  enqueue(...replies: Array<FakeReply & { match?: RegExp }>): void;
  setHandler(h: FakeHandler): void;
  /** Requests whose path matches. */
  calls(match: RegExp): FakeRequest[];
  close(): Promise<void>;
}

export async function startFakePlatform(handler: FakeHandler): Promise<FakePlatform> {
  const queue: Array<FakeReply & { match?: RegExp }> = [];
  const requests: FakeRequest[] = [];
  let h = handler;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const u = new URL(req.url ?? '/', 'http://127.0.0.1');
      const ct = String(req.headers['content-type'] ?? '');
      let body: any = raw;
      try {
        if (ct.includes('json')) body = raw ? JSON.parse(raw) : null;
        else if (ct.includes('x-www-form-urlencoded')) body = Object.fromEntries(new URLSearchParams(raw));
      } catch {
        /* keep raw */
      }
      const fr: FakeRequest = { method: req.method ?? 'GET', path: u.pathname, query: u.searchParams, headers: req.headers, body, raw };
      requests.push(fr);
      try {
        const i = queue.findIndex((q) => !q.match || q.match.test(fr.path));
        const reply = i >= 0 ? queue.splice(i, 1)[0]! : await h(fr);
        const status = reply.status ?? 200;
        const headers: Record<string, string> = { ...reply.headers };
        let out = '';
        if (reply.body !== undefined && status !== 204) {
          if (typeof reply.body === 'string') out = reply.body;
          else {
            out = JSON.stringify(reply.body);
            headers['content-type'] ??= 'application/json';
          }
        }
        res.writeHead(status, headers);
        res.end(out);
      } catch (e) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`fake failed: ${(e as Error).message}`);
      }
    });
  });
  server.keepAliveTimeout = 500;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    enqueue: (...r) => queue.push(...r),
    setHandler: (nh) => (h = nh),
    calls: (m) => requests.filter((r) => m.test(r.path)),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
