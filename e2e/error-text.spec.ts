// A failed call's line in the room says what happened in plain words, not the transport's raw "Failed to fetch".
import { expect, test } from './fixtures';
import { openThroughProxy } from './support/proxied-room';
import { startTcpProxy } from './support/tcp-proxy';

test('a message sent while the server is unreachable says "Not sent: the server is not answering"', async ({ page, freshSession, baseURL, expectedConsole }) => {
  expectedConsole.push(/net::ERR_(INCOMPLETE_CHUNKED_ENCODING|CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE)/, /Failed to load resource/);
  const proxy = await startTcpProxy(Number(new URL(baseURL!).port));
  try {
    const room = await openThroughProxy(page, proxy, freshSession);

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
