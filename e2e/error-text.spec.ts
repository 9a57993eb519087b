// A failed call's line in the room says what happened in plain words, not the transport's raw "Failed to fetch".
import { expect, test, TOKEN } from './fixtures';
import { RoomPage } from './pages/room-page';
import { startTcpProxy } from './support/tcp-proxy';

test('a message sent while the server is unreachable says "Not sent: the server is not answering"', async ({ page, freshSession, baseURL, expectedConsole }) => {
  expectedConsole.push(/net::ERR_(INCOMPLETE_CHUNKED_ENCODING|CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE)/, /Failed to load resource/);
  const proxy = await startTcpProxy(Number(new URL(baseURL!).port));
  try {
    const room = new RoomPage(page);
    const origin = `http://127.0.0.1:${proxy.port}`;
    await page.goto(`${origin}/login?token=${TOKEN}`);
    await page.goto(`${origin}/?session=${encodeURIComponent(freshSession)}`);
    await room.waitLive();
    // The Markdown renderer in before the cut (it is fetched when the browser is idle after going live).
    await room.send('**rendered**');
    await expect(room.messages('assistant').locator('strong', { hasText: 'rendered' })).toHaveCount(1);

    await proxy.cut();
    await room.composer.fill('are you there?');
    await room.composer.press('Enter');
    const alert = page.getByTestId('composer').getByRole('alert');
    await expect(alert).toHaveText('Not sent: the server is not answering');
    // The text is given back to send again.
    await expect(room.composer).toHaveValue('are you there?');
  } finally {
    await proxy.close();
  }
});
