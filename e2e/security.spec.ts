// What the room loads and who may frame it: CSP and X-Frame-Options on every page, remote images in model output not fetched until clicked.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, test, TOKEN } from './fixtures';

const directive = (csp: string, name: string) => csp.split(';').map((d) => d.trim()).find((d) => d.startsWith(`${name} `));

test('every page is served with the CSP and X-Frame-Options; Next’s scripts carry the page’s nonce', async ({ request }) => {
  // The room (without and with the login cookie), a deep link, an unknown page.
  const cookie = { cookie: `crosstalk_token=${TOKEN}` };
  const pages = [
    await request.get('/', { headers: {} }),
    await request.get('/?session=agent%3Amain%3Amain', { headers: cookie }),
    await request.get('/no-such-page', { headers: cookie }),
  ];
  const nonces = new Set<string>();
  for (const res of pages) {
    const csp = res.headers()['content-security-policy'] ?? '';
    expect(directive(csp, 'img-src'), res.url()).toBe("img-src 'self' data:");
    expect(directive(csp, 'frame-ancestors'), res.url()).toBe("frame-ancestors 'none'");
    expect(res.headers()['x-frame-options'], res.url()).toBe('DENY');
    const nonce = /'nonce-([^']+)'/.exec(directive(csp, 'script-src') ?? '')?.[1];
    expect(nonce, res.url()).toBeTruthy();
    nonces.add(nonce!);
    // Every script of the document carries this response's nonce (else the browser refuses it).
    const html = await res.text();
    const scripts = html.match(/<script\b[^>]*>/g) ?? [];
    expect(scripts.length, res.url()).toBeGreaterThan(0);
    for (const tag of scripts) expect(tag, res.url()).toContain(`nonce="${nonce}"`);
  }
  expect(nonces.size, 'a fresh nonce per page').toBe(pages.length);

  // The login redirect, an asset, and the routes scripts/start.mjs serves without Next (tRPC, JSON-RPC).
  const login = await request.get(`/login?token=${TOKEN}`, { maxRedirects: 0 });
  expect(login.status()).toBe(303);
  expect(login.headers()['x-frame-options']).toBe('DENY');
  const asset = /src="(\/_next\/static\/[^"]+\.js)"/.exec(await pages[1]!.text())?.[1];
  expect(asset).toBeTruthy();
  expect((await request.get(asset!)).headers()['x-frame-options']).toBe('DENY');
  const trpc = await request.get('/api/trpc/status.get', { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(trpc.status()).toBe(200);
  const gateway = await request.post('/api/gateway', { headers: { authorization: `Bearer ${TOKEN}` }, data: { jsonrpc: '2.0', id: 1, method: 'status', params: {} } });
  expect(gateway.status()).toBe(200);
  for (const res of [trpc, gateway]) {
    expect(res.headers()['x-frame-options'], res.url()).toBe('DENY');
    expect(directive(res.headers()['content-security-policy'] ?? '', 'frame-ancestors'), res.url()).toBe("frame-ancestors 'none'");
  }
});

test('a path that only begins like an excluded one is a page: its not-found page has the CSP; /mcp, chunks and icons do not pass the proxy', async ({ request }) => {
  // The proxy skips exactly /mcp, /_next/static/*, /_next/image, /favicon.ico and /icon.svg; a longer path is Next's
  // not-found page, a document like any other (it had no CSP, and its scripts no nonce, when the exclusions were
  // unanchored prefixes).
  const headers = { cookie: `crosstalk_token=${TOKEN}` };
  for (const p of ['/mcpx', '/mcp-room', '/mcp/x', '/favicon.icoX', '/icon.svgx', '/_next/imagex', '/_next/staticx', '/_next/static']) {
    const res = await request.get(p, { headers });
    expect(res.status(), p).toBe(404);
    expect(res.headers()['content-type'], p).toContain('text/html');
    const csp = res.headers()['content-security-policy'] ?? '';
    expect(directive(csp, 'frame-ancestors'), p).toBe("frame-ancestors 'none'");
    expect(directive(csp, 'img-src'), p).toBe("img-src 'self' data:");
    expect(res.headers()['x-frame-options'], p).toBe('DENY');
    const nonce = /'nonce-([^']+)'/.exec(directive(csp, 'script-src') ?? '')?.[1];
    expect(nonce, p).toBeTruthy();
    for (const tag of (await res.text()).match(/<script\b[^>]*>/g) ?? []) expect(tag, p).toContain(`nonce="${nonce}"`);
  }

  // What the proxy skips is as before: framing headers, no page policy (no nonce). /mcp is the MCP endpoint (JSON).
  const mcp = await request.get('/mcp');
  expect(mcp.status()).toBe(401);
  expect(mcp.headers()['content-type']).toContain('application/json');
  expect(mcp.headers()['x-frame-options']).toBe('DENY');
  expect(mcp.headers()['content-security-policy'] ?? '').not.toContain('nonce-');
  const page = await (await request.get('/', { headers })).text();
  const chunk = /src="(\/_next\/static\/[^"]+\.js)"/.exec(page)?.[1];
  expect(chunk).toBeTruthy();
  // /favicon.ico, which browsers ask for by themselves, is the room's icon (public/favicon.ico), not a not-found page.
  const favicon = await request.get('/favicon.ico');
  expect(favicon.status()).toBe(200);
  expect(favicon.headers()['content-type']).toBe('image/x-icon');
  expect([...(await favicon.body()).subarray(0, 4)]).toEqual([0, 0, 1, 0]);
  for (const [p, type] of [[chunk!, 'javascript'], ['/icon.svg', 'image/svg+xml'], ['/favicon.ico', 'image/x-icon']] as const) {
    const res = await request.get(p);
    expect(res.status(), p).toBe(200);
    expect(res.headers()['content-type'], p).toContain(type);
    expect(res.headers()['x-frame-options'], p).toBe('DENY');
    expect(res.headers()['content-security-policy'], p).toBeUndefined();
  }
  // The image optimizer's own policy (a sandbox), not the page's.
  const image = await request.get('/_next/image?url=%2Ficon-192.png&w=64&q=75');
  expect(image.status()).toBe(200);
  expect(image.headers()['content-type']).toBe('image/png');
  expect(image.headers()['x-frame-options']).toBe('DENY');
  expect(image.headers()['content-security-policy']).not.toContain('nonce-');
});

test('a remote image in model output is a link: its server hears nothing until a person clicks it', async ({ room, page, context, freshSession, expectedConsole }) => {
  const hits: string[] = [];
  const images = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'image/svg+xml' }).end('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>');
  });
  await new Promise<void>((r) => images.listen(0, '127.0.0.1', r));
  const remote = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
  const violations: string[] = [];
  await page.exposeFunction('__cspViolation', (v: string) => violations.push(v));
  await page.addInitScript(() =>
    document.addEventListener('securitypolicyviolation', (e) => (window as unknown as { __cspViolation(v: string): void }).__cspViolation(`${e.violatedDirective} ${e.blockedURI}`)),
  );
  try {
    await room.open(freshSession);
    await room.send(`/reply Here: ![chart](${remote}/p?d=secret) and ![logo](/icon.svg) and **done**`);
    const body = room.messages('assistant').filter({ hasText: 'Here:' }).getByTestId('message-text');
    await expect(body.locator('strong', { hasText: 'done' })).toHaveCount(1);
    const link = body.getByRole('link', { name: /Remote image: chart/ });
    await expect(link).toHaveAttribute('href', `${remote}/p?d=secret`);
    await expect(body.locator(`img[src^="${remote}"]`)).toHaveCount(0);
    // An image of this origin shows inline.
    await expect.poll(() => body.locator('img[alt="logo"]').evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
    // Opening the session again (history, not the live stream) renders it the same way.
    await page.reload();
    await room.waitLive();
    await expect(body.getByRole('link', { name: /Remote image: chart/ })).toBeVisible();
    expect(hits, 'no request before the click').toEqual([]);

    // Even an image the room did not mean to show stays unfetched: the CSP refuses it (and reports it).
    expectedConsole.push(/image '.*\/injected' violates the following Content Security Policy directive: "img-src/);
    await page.evaluate((src) => {
      const img = document.createElement('img');
      img.src = src;
      document.body.append(img);
    }, `${remote}/injected`);
    await expect.poll(() => violations).toEqual([`img-src ${remote}/injected`]);
    expect(hits).toEqual([]);

    // The click opens it in a tab of its own: now, and only now, its server is asked.
    const [tab] = await Promise.all([context.waitForEvent('page'), link.click()]);
    // (The new tab may also ask for the server's favicon.)
    await expect.poll(() => hits.filter((h) => h !== '/favicon.ico')).toEqual(['/p?d=secret']);
    await tab.close();
    expect(violations).toEqual([`img-src ${remote}/injected`]);
  } finally {
    await page.goto('about:blank');
    images.closeAllConnections();
    await new Promise<void>((r) => images.close(() => r()));
  }
});
