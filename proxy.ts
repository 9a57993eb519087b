// Next's proxy for page requests: a fresh CSP nonce per page, on the request (Next reads it to stamp its scripts) and the response.
import { NextResponse, type NextRequest } from 'next/server';
import { contentSecurityPolicy, FRAME_HEADERS, newNonce } from '@/lib/security/headers';

export function proxy(request: NextRequest): NextResponse {
  const nonce = newNonce();
  const csp = contentSecurityPolicy(nonce, { dev: process.env.NODE_ENV === 'development' });
  const requestHeaders = new Headers(request.headers);
  requestHeaders.set('x-nonce', nonce);
  requestHeaders.set('content-security-policy', csp);
  const response = NextResponse.next({ request: { headers: requestHeaders } });
  response.headers.set('content-security-policy', csp);
  for (const [k, v] of Object.entries(FRAME_HEADERS)) response.headers.set(k, v);
  return response;
}

export const config = {
  // Pages only: API routes, A2A, MCP and built assets are never documents (next.config.mjs gives them the framing headers).
  matcher: [{ source: '/((?!api/|a2a/|mcp|_next/static|_next/image|favicon.ico|icon.svg).*)' }],
};
