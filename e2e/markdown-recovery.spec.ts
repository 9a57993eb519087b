// The Markdown renderer's code fetched over a dropped connection: no uncaught error, a reply meanwhile plain, rich once the code is in.
import { expect, test } from './fixtures';

/** Text only the chunk of components/transcript/markdown-rich.tsx holds (its Streamdown's class list). */
const RICH_CHUNK_MARKER = 'markdown min-w-0 space-y-2';

test('a Markdown reply renders after the first load of the renderer failed, with no uncaught error', async ({ room, page, freshSession, expectedConsole }) => {
  // The aborted script requests.
  expectedConsole.push(/Failed to load resource: net::ERR_FAILED/);
  // Every request for the renderer's chunk fails (the runtime's own quick retry too) until the test lets them through.
  let blocked = true;
  let aborted = 0;
  await page.route('**/_next/static/chunks/**', async (route) => {
    const response = await route.fetch();
    const body = await response.text();
    if (blocked && body.includes(RICH_CHUNK_MARKER)) {
      aborted++;
      return route.abort('failed');
    }
    return route.fulfill({ response, body });
  });

  // The room fetches the renderer when idle after going live: that load fails.
  await room.open(freshSession);
  await expect.poll(() => aborted).toBeGreaterThanOrEqual(2);

  // A reply while the renderer is missing shows its text, plain.
  await room.send('/reply **bold** words');
  const reply = room.texts('assistant');
  await expect(reply).toHaveCount(1);
  await expect(reply.locator('.markdown-plain')).toHaveText('**bold** words');

  // The connection is back: the renderer loads and the same reply turns rich.
  blocked = false;
  await expect(reply.locator('strong', { hasText: 'bold' })).toHaveCount(1);
  await expect(reply.locator('.markdown-plain')).toHaveCount(0);
  // And the next one is rich from the start.
  await room.send('/reply *again* **bold**');
  await expect(reply).toHaveCount(2);
  await expect(reply.nth(1).locator('strong', { hasText: 'bold' })).toHaveCount(1);
});
