// A plain node:http server for the gateway's fetch-style handlers: the headless worker and the tests use it (Next serves the app).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FullRuntime } from '../runtime-types';
import { routeA2A } from '../a2a/http';
import { handleEvents, handleMetrics } from './handlers';
import { handleGatewayNode } from './node-gateway';
import { handleChannelInbound } from './channel-inbound';
import { serveFetch } from './node-fetch';
import { handleMcp } from '../mcp-server/http';

const channelOf = (pathname: string) => {
  const raw = pathname.slice('/api/channels/'.length).split('/')[0] ?? '';
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw; // refused by the handler's channel-name check
  }
};

export async function serve(rt: FullRuntime, o: { host?: string; port?: number } = {}): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.method === 'POST' && (req.url === '/api/gateway' || req.url?.startsWith('/api/gateway?'))) return handleGatewayNode(rt, req, res);
    serveFetch(req, res, async (request) => {
      const p = new URL(request.url).pathname;
      if (p === '/api/gateway/events' && req.method === 'GET') return handleEvents(rt, request);
      if (p === '/api/metrics') return handleMetrics(rt, request);
      if (p === '/api/health') return Response.json({ status: 'ok' });
      if (p === '/mcp') return handleMcp(rt, request);
      if (req.method === 'POST' && p.startsWith('/api/channels/')) return handleChannelInbound(rt, channelOf(p), request);
      return (p.startsWith('/a2a/') ? await routeA2A(rt, request) : null) ?? Response.json({ ok: false, error: { code: 'invalid_request', message: `no route ${req.method} ${p}` } }, { status: 404 });
    });
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

