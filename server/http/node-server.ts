// A plain node:http server for the gateway's fetch-style handlers: the headless worker and the tests use it (Next serves the app).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import type { FullRuntime } from '../boot';
import { routeA2A } from '../a2a/http';
import { handleEvents, handleMetrics } from './handlers';
import { handleGatewayNode } from './node-gateway';
import { handleChannelInbound } from './channel-inbound';

/** Resolves when the socket can take more, or when the client went away. */
function drained(res: http.ServerResponse, signal: AbortSignal): Promise<void> {
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

const channelOf = (pathname: string) => {
  const raw = pathname.slice('/api/channels/'.length).split('/')[0] ?? '';
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw; // refused by the handler's channel-name check
  }
};

export async function serve(rt: FullRuntime, o: { host?: string; port?: number } = {}): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(async (req, res) => {
    if (req.method === 'POST' && (req.url === '/api/gateway' || req.url?.startsWith('/api/gateway?'))) return handleGatewayNode(rt, req, res);
    const ac = new AbortController();
    res.on('close', () => ac.abort());
    try {
      const url = `http://127.0.0.1${req.url}`;
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
      const request = new Request(url, {
        method: req.method,
        headers: req.headers as Record<string, string>,
        body: hasBody ? (Readable.toWeb(req) as ReadableStream) : undefined,
        // @ts-expect-error node's fetch needs duplex for streamed bodies
        duplex: 'half',
        signal: ac.signal,
      });
      const p = new URL(url).pathname;
      let response: Response;
      if (p === '/api/gateway/events' && req.method === 'GET') response = handleEvents(rt, request);
      else if (p === '/api/metrics') response = await handleMetrics(rt, request);
      else if (p === '/api/health') response = Response.json({ status: 'ok' });
      else if (req.method === 'POST' && p.startsWith('/api/channels/')) response = await handleChannelInbound(rt, channelOf(p), request);
      else response = (p.startsWith('/a2a/') ? await routeA2A(rt, request) : null) ?? Response.json({ ok: false, error: { code: 'invalid_request', message: `no route ${req.method} ${p}` } }, { status: 404 });
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (!response.body) return void res.end();
      const reader = response.body.getReader();
      ac.signal.addEventListener('abort', () => void reader.cancel().catch(() => undefined));
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        // Backpressure: a paused client stops the reads (and the event stream behind them) instead of growing a buffer.
        if (!res.write(value)) await drained(res, ac.signal);
      }
      res.end();
    } catch (e) {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(e));
    }
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((r) => server.listen(o.port ?? 0, o.host ?? '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${o.host ?? '127.0.0.1'}:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

