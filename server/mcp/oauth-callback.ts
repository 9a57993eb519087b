// GET /api/mcp/oauth/callback: where an MCP server's authorization server sends the person back (public; bound to the state).
import type { McpManager } from './manager';
import { nulPath } from '../unstorable';

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A small page for the person's browser tab: what happened, and that the tab may be closed. */
export async function handleOAuthCallback(mcp: Pick<McpManager, 'oauthCallback'>, request: Request): Promise<Response> {
  if (request.method !== 'GET') return new Response('method not allowed', { status: 405, headers: { allow: 'GET' } });
  const q = new URL(request.url).searchParams;
  const params = { state: q.get('state'), code: q.get('code'), error: q.get('error'), errorDescription: q.get('error_description') };
  // A value no store can hold (NUL, a lone surrogate) names no authorization: 400 on both stores (PostgreSQL answered
  // 500 with its encoding error, probe V).
  const out = nulPath(params) !== null ? { ok: false as const, status: 400, message: 'The callback\'s parameters are not valid text.' } : await mcp.oauthCallback(params);
  const title = out.ok ? 'Authorized' : 'Authorization failed';
  const text = out.ok ? `crosstalk can use the MCP server ${out.server} now. You can close this tab.` : out.message;
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} · crosstalk</title></head><body><h1>${title}</h1><p data-testid="oauth-result">${escape(text)}</p></body></html>`;
  return new Response(body, {
    status: out.ok ? 200 : out.status,
    headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', 'content-security-policy': "default-src 'none'; frame-ancestors 'none'" },
  });
}
