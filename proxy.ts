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
  // Pages only: API routes, A2A, /mcp, built chunks, the image optimizer and the icons (public/favicon.ico, app/icon.svg)
  // are never documents (next.config.mjs gives them the framing headers). Each exclusion ends at a `/` or the path's
  // end: unanchored, `mcp` or `favicon.ico` also skipped `/mcpx` or `/favicon.icoX`, whose not-found page then went
  // out without a CSP (and its scripts without a nonce).
  matcher: [{ source: '/((?!api/|a2a/|mcp$|_next/static/|_next/image$|favicon\\.ico$|icon\\.svg$).*)' }],
};
