// The gateway's HTTP routes on bare node:http, one table: `npm start` serves them before any page (scripts/start.mjs),
// the headless worker and the tests through server/http/node-server.ts. Next's app/ routes are the same handlers for `next dev`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FullRuntime } from '../runtime-types';
import { channelOf, handleChannelInbound } from './channel-inbound';
import { handleEvents, handleMetrics } from './handlers';
import { handleLogin } from './login';
import { handleGatewayNode } from './node-gateway';
import { serveFetch } from './node-fetch';
import { FRAME_HEADERS, NON_DOCUMENT_CSP } from './security-headers';

const pathOf = (url: string | undefined): string => {
  const u = url ?? '/';
  const q = u.indexOf('?');
  return q < 0 ? u : u.slice(0, q);
};

/**
 * Whether a request is the gateway's (API, A2A, MCP, login) rather than a page or an asset of the room. Read on the
 * path as a router resolves it (`.`, `..` and `%2e` segments folded): `/./api/health` was not the gateway's here, went
 * to the pages' worker with its key, and Next resolved it to app/api/health there (probe H).
 */
export function isApiPath(url: string | undefined): boolean {
  const raw = pathOf(url);
  const p = /(^|\/)(\.|%2e)/i.test(raw) ? resolvedPath(raw) : raw;
  return p.startsWith('/api/') || p.startsWith('/a2a/') || p === '/mcp' || p === '/login';
}

/** A path with its dot segments resolved as a URL parser does (`%2e` is a dot). */
function resolvedPath(p: string): string {
  try {
    return new URL(p, 'http://h').pathname;
  } catch {
    return p;
  }
}

/** Never documents: nothing may frame them or load anything from them. */
const API_HEADERS: ReadonlyArray<[string, string]> = [...Object.entries(FRAME_HEADERS), ['Content-Security-Policy', NON_DOCUMENT_CSP]];

const refusal = (status: number, message: string) => Response.json({ ok: false, error: { code: 'invalid_request', message } }, { status });
const notFound = (method: string, p: string) => refusal(404, `no route ${method} ${p}`);
/** A path served for other methods only: 405, as Next's routes answer it. */
const wrongMethod = (method: string, p: string) => refusal(405, `${method} is not served on ${p}`);

/**
 * Serves one API request. The MCP server, A2A, tRPC, Web Push actions and the OAuth callback load their modules (and
 * SDKs) with their first request: the gateway is ready without them (server/boot-lazy.test.ts).
 */
export function serveApi(rt: FullRuntime, req: IncomingMessage, res: ServerResponse): void {
  const method = req.method ?? 'GET';
  const p = pathOf(req.url);
  for (const [k, v] of API_HEADERS) res.setHeader(k, v);
  if (p === '/api/gateway' && method === 'POST') return handleGatewayNode(rt, req, res);
  if (p.startsWith('/api/trpc/')) return serveFetch(req, res, async (r) => (await import('./trpc')).handleTrpc(r, rt), { gzip: true });
  serveFetch(req, res, async (request) => {
    if (p === '/api/gateway/events' && method === 'GET') return handleEvents(rt, request);
    if (p === '/api/metrics') return handleMetrics(rt, request);
    if (p === '/api/health') return Response.json({ status: 'ok' });
    if (p === '/api/gateway') return wrongMethod(method, p);
    if (p === '/login') return method === 'GET' ? handleLogin(request, rt.token) : wrongMethod(method, p);
    if (p === '/mcp') return (await import('../mcp-server/http')).handleMcp(rt, request);
    if (p === '/api/push/action' && method === 'POST') return (await import('./push-action')).handlePushAction(rt, request);
    if (p === '/api/mcp/oauth/callback') return (await import('../mcp/oauth-callback')).handleOAuthCallback(rt.mcp, request);
    if (method === 'POST' && p.startsWith('/api/channels/')) return handleChannelInbound(rt, channelOf(p), request);
    if (p.startsWith('/a2a/')) return (await (await import('../a2a/http')).routeA2A(rt, request)) ?? notFound(method, p);
    return notFound(method, p);
  });
}
