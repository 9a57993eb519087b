// An MCP server behind OAuth in the room (CONTRACT §5, §7): its `authorization` item is a link named "Open" with "Done"
// and "Decline"; opened, the authorization server sends the browser to crosstalk's callback, which completes it.
import { startOAuthMcpServer, type OAuthMcpServer } from '../server/mcp/testing/oauth-server';
import { expect, test, TOKEN } from './fixtures';
import { RoomPage } from './pages/room-page';

test('an authorization item is opened and completed in the room; the server is used after', async ({ page, ownServer, expectedConsole }) => {
  test.setTimeout(180_000);
  expectedConsole.push(/net::ERR_(INCOMPLETE_CHUNKED_ENCODING|CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE)/);
  let remote: OAuthMcpServer | undefined;
  try {
    // A real OAuth-protected MCP server (the SDK's own server-side auth) on 127.0.0.1.
    remote = await startOAuthMcpServer();
    const server = await ownServer({ config: { agents: [{ id: 'main', tools: { 'mcp__remote__*': 'auto' } }], mcp: { servers: { remote: { url: remote.url } } } } });
    const room = new RoomPage(page);
    await page.goto(`${server.origin}/login?token=${TOKEN}`);
    // The item of a connection is raised on the default agent's main session.
    await page.goto(`${server.origin}/?session=${encodeURIComponent('agent:main:main')}`);
    await room.waitLive();

    const item = page.locator('[data-testid="approval-attachment"][data-kind="authorization"]');
    await expect(item).toBeVisible({ timeout: 30_000 });
    await expect(item).toContainText('Authorize crosstalk to use the MCP server remote');
    const open = item.getByRole('link', { name: 'Open', exact: true });
    await expect(open).toHaveAttribute('href', /\/authorize\?.*code_challenge_method=S256/);
    await expect(item.getByRole('button', { name: 'Decline', exact: true })).toBeVisible();

    // "Done" before authorizing: crosstalk tries again, the server still wants a token, and a new item is raised.
    const firstId = await item.getAttribute('data-approval-id');
    await item.getByRole('button', { name: 'Done', exact: true }).click();
    await expect(item).toBeVisible();
    await expect(item).not.toHaveAttribute('data-approval-id', firstId!, { timeout: 30_000 });

    // "Open": the authorization server's page sends the new tab back to crosstalk's callback, which completes the item.
    const [tab] = await Promise.all([page.waitForEvent('popup'), item.getByRole('link', { name: 'Open', exact: true }).click()]);
    await expect(tab.getByTestId('oauth-result')).toHaveText('crosstalk can use the MCP server remote now. You can close this tab.');
    await tab.close();
    await expect(item).toHaveCount(0, { timeout: 30_000 });
    await expect(page.getByTestId('status-mcp-remote')).toHaveText(/^up · 1 tools?$/, { timeout: 30_000 });

    await room.send('/tool mcp__remote__whoami {}');
    await expect(room.messages('assistant').filter({ hasText: 'hello client-' })).toHaveCount(1, { timeout: 30_000 });
  } finally {
    await remote?.close();
  }
});
