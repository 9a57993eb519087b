// The server renders the room once for itself shortly after it is ready (scripts/start.mjs `warmRoom`): the first
// visit then finds the room's modules loaded instead of loading them on the event loop while runs stream. Before that
// the server answers the gateway with Next not loaded at all.
import { expect, test, TOKEN } from './fixtures';
import { RoomPage } from './pages/room-page';

test('the server warms the room after it is ready, before anyone visits', async ({ page, ownServer }) => {
  test.setTimeout(90_000);
  const server = await ownServer();
  // Nobody has asked for a page yet: the server's own render, over loopback, with its token.
  await expect.poll(() => server.output(), { timeout: 30_000 }).toMatch(/crosstalk: room warmed \(HTTP 200, \d+ ms; then [1-9]\d* assets, 2 routes and the room.s API in \d+ ms\)/);
  expect(server.output().match(/room warmed/g)).toHaveLength(1);
  await page.goto(`${server.origin}/login?token=${TOKEN}`);
  await page.goto(`${server.origin}/`);
  const room = new RoomPage(page);
  await room.waitLive();
});

test('the gateway answers before Next is loaded; the first page loads it', async ({ request, ownServer }) => {
  test.setTimeout(90_000);
  const server = await ownServer({ env: { CROSSTALK_WARM_ROOM_MS: '-1' }, waitFor: 'gateway' });
  const call = async () => (await request.post(`${server.origin}/api/gateway`, { headers: { authorization: `Bearer ${TOKEN}` }, data: { jsonrpc: '2.0', id: 1, method: 'agents.list', params: {} } })).json();
  expect((await call()).result.agents.length).toBeGreaterThan(0);
  // Nothing has asked for a page (no warm-up): Next's server is not loaded, and the gateway does not need it.
  await new Promise((r) => setTimeout(r, 1_500));
  expect(server.output()).not.toContain('pages ready');
  expect((await request.get(`${server.origin}/login`, { maxRedirects: 0 })).status()).toBeLessThan(500);
  expect(server.output()).toMatch(/crosstalk: pages ready \(Next\.js loaded in \d+ ms\)/);
  expect((await call()).result.agents.length).toBeGreaterThan(0);
});
