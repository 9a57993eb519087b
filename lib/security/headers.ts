// The room's security headers: a per-request Content-Security-Policy (script and style nonces) and the framing ban.

export { FRAME_HEADERS, NON_DOCUMENT_CSP } from '@/server/http/security-headers';

/** A fresh nonce: 128 random bits, base64. */
export function newNonce(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return btoa(String.fromCharCode(...bytes));
}

/**
 * The page policy. Scripts run only with this response's nonce (Next puts it on its own scripts and chunks when it finds
 * it in the request's CSP header; 'strict-dynamic' extends the trust to the chunks they load). Style elements need the
 * nonce too; style attributes stay allowed ('unsafe-inline' in style-src-attr): server-rendered React writes them
 * (virtual list heights, highlighter colours), and they cannot run code or load anything img-src/font-src refuse.
 * Images only from this origin and data: URLs: model output cannot make the room fetch a remote URL.
 */
export function contentSecurityPolicy(nonce: string, opts: { dev?: boolean } = {}): string {
  const dev = opts.dev ?? false;
  return [
    "default-src 'self'",
    // Development needs eval (React's dev tooling) and inline styles (hot reload); production needs neither.
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${dev ? " 'unsafe-eval'" : ''}`,
    dev ? "style-src 'self' 'unsafe-inline'" : `style-src 'self' 'nonce-${nonce}'`,
    "style-src-attr 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    // The push service worker: worker-src falls back to script-src, where 'strict-dynamic' ignores 'self'.
    "worker-src 'self'",
    "manifest-src 'self'",
    "media-src 'none'",
    "object-src 'none'",
    "frame-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}
