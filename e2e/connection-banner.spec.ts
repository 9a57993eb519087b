// The connection banner's words: a plain sentence while the server is away (not "Unknown error"), "signed out" with a way back.
import { expect, test } from './fixtures';
import { openThroughProxy } from './support/proxied-room';
import { startTcpProxy } from './support/tcp-proxy';

test('while the server is away the banner says so in plain words, not the transport\'s "Unknown error"', async ({ page, freshSession, baseURL, expectedConsole }) => {
  expectedConsole.push(/net::ERR_(INCOMPLETE_CHUNKED_ENCODING|CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE)/, /Failed to load resource/);
  const proxy = await startTcpProxy(Number(new URL(baseURL!).port));
  try {
    const room = await openThroughProxy(page, proxy, freshSession);
    await proxy.cut();
    const banner = page.getByTestId('connection-banner');
    await expect(banner).toHaveAttribute('role', 'alert');
    await expect(banner).toContainText('The server is not answering; trying again…');
    await expect(banner).not.toContainText('Unknown error');
    await expect(banner).not.toContainText(/failed to fetch|network error/i);

    await proxy.restore();
    await expect(banner).toHaveCount(0, { timeout: 30_000 });
    await room.waitLive();
  } finally {
    await proxy.close();
  }
});

test('a stream refused for an expired login says "signed out" and links to sign in, instead of Retry', async ({ page, freshSession, baseURL, expectedConsole }) => {
  // The cut, then the room's other calls answered 401 once the cookie is gone.
  expectedConsole.push(/net::ERR_(INCOMPLETE_CHUNKED_ENCODING|CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE)/, /Failed to load resource/);
  const proxy = await startTcpProxy(Number(new URL(baseURL!).port));
  try {
    await openThroughProxy(page, proxy, freshSession);
    await proxy.cut();
    const banner = page.getByTestId('connection-banner');
    await expect(banner).toBeVisible();
    // The login cookie expires while the tab is cut off: the stream's reconnect is refused with UNAUTHORIZED.
    await page.context().clearCookies();
    await proxy.restore();

    await expect(banner).toContainText('Signed out: sign in again.');
    await expect(banner).not.toContainText('missing or wrong token');
    await expect(banner.getByRole('link', { name: 'Sign in' })).toHaveAttribute('href', '/');
    await expect(banner.getByRole('button', { name: 'Retry' })).toHaveCount(0);
    await expect(page.getByTestId('status-bar')).toHaveAttribute('data-connection', 'error');
  } finally {
    await proxy.close();
  }
});
