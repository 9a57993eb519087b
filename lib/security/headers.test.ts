// The page proxy's security headers: a CSP with a fresh nonce per page (also handed to Next on the request) and the framing ban.
import { NextRequest } from 'next/server';
import { describe, expect, it } from 'vitest';
import { config, proxy } from '../../proxy';
import { contentSecurityPolicy } from './headers';

const directives = (csp: string) => new Map(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name!, values]));

describe('page security headers (proxy.ts)', () => {
  it('sends a CSP that loads images only from this origin or data:, bans framing, and runs scripts only with a fresh nonce', () => {
    const res = proxy(new NextRequest('http://127.0.0.1:3000/?session=agent:main:main'));
    const csp = res.headers.get('content-security-policy');
    expect(csp).toBeTruthy();
    const d = directives(csp!);
    expect(d.get('img-src')).toEqual(["'self'", 'data:']);
    expect(d.get('frame-ancestors')).toEqual(["'none'"]);
    expect(d.get('object-src')).toEqual(["'none'"]);
    expect(d.get('base-uri')).toEqual(["'none'"]);
    const nonce = /'nonce-([A-Za-z0-9+/=]+)'/.exec(d.get('script-src')!.join(' '))?.[1];
    expect(nonce).toBeTruthy();
    expect(d.get('script-src')).toEqual(["'self'", `'nonce-${nonce}'`, "'strict-dynamic'"]);
    // No inline script or eval, no inline <style> without the nonce.
    expect(csp).not.toContain("'unsafe-eval'");
    expect(d.get('style-src')).toEqual(["'self'", `'nonce-${nonce}'`]);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    // Next reads the nonce from the request's CSP header to stamp its own scripts; the layout reads x-nonce.
    expect(res.headers.get('x-middleware-request-content-security-policy')).toBe(csp);
    expect(res.headers.get('x-middleware-request-x-nonce')).toBe(nonce);

    const again = proxy(new NextRequest('http://127.0.0.1:3000/'));
    expect(again.headers.get('content-security-policy')).not.toBe(csp);
  });

  it('runs on pages (the room, login) and not on API routes or built assets', () => {
    const source = new RegExp(`^${config.matcher[0]!.source}$`);
    for (const page of ['/', '/login', '/some/missing/page']) expect(source.test(page), page).toBe(true);
    for (const other of ['/api/trpc/status.get', '/api/gateway', '/a2a/main', '/mcp', '/_next/static/chunks/x.js']) expect(source.test(other), other).toBe(false);
  });

  it('is looser only in development (eval for React dev tooling, inline styles for hot reload)', () => {
    expect(contentSecurityPolicy('n', { dev: true })).toContain("'unsafe-eval'");
    expect(contentSecurityPolicy('n')).not.toMatch(/style-src [^;]*'unsafe-inline'/);
  });
});
