// The server renders the room once for itself shortly after it is ready (scripts/start.mjs `warmRoom`): the first
// visit then finds the room's modules loaded instead of loading them on the event loop while runs stream.
import { expect, test, TOKEN } from './fixtures';
import { RoomPage } from './pages/room-page';

test('the server warms the room after it is ready, before anyone visits', async ({ page, ownServer }) => {
  test.setTimeout(90_000);
  const server = await ownServer();
  // Nobody has asked for a page yet: the server's own render, over loopback, with its token.
  await expect.poll(() => server.output(), { timeout: 30_000 }).toMatch(/crosstalk: room warmed \(HTTP 200, \d+ ms\)/);
  expect(server.output().match(/room warmed/g)).toHaveLength(1);
  await page.goto(`${server.origin}/login?token=${TOKEN}`);
  await page.goto(`${server.origin}/`);
  const room = new RoomPage(page);
  await room.waitLive();
});
