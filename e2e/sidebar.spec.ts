// The sessions sidebar pages with the sessions.list cursor (scroll or "Load more sessions") and stays live while paged.
import { expect, test, TOKEN } from './fixtures';
import { rpc } from './support/rpc';
import { ARCHIVE_AGENT, ARCHIVE_SESSIONS, archiveSessionKey } from './support/seed-keys';
import { SESSIONS_PAGE } from '../lib/room/queries';

test('the sessions sidebar loads older sessions a page at a time and stays live', async ({ room, page, request, freshSession }) => {
  await room.waitLive();
  const items = room.sidebar.getByTestId('session-item');
  const archived = room.sidebar.locator(`[data-testid="agent-group"][data-agent-id="${ARCHIVE_AGENT}"] [data-testid="session-item"]`);
  const loadMore = room.sidebar.getByRole('button', { name: 'Load more sessions' });

  // The first page only: the oldest seeded sessions are not listed yet.
  await expect(loadMore).toBeVisible();
  expect(await items.count()).toBe(SESSIONS_PAGE);
  await expect(room.sessionItem(archiveSessionKey(ARCHIVE_SESSIONS - 1))).toHaveCount(0);

  // Scrolling to the end of the list loads the next page.
  const shown = await items.count();
  await room.sidebar.getByTestId('sidebar-scroll').evaluate((el) => el.scrollTo({ top: el.scrollHeight }));
  await expect.poll(() => items.count()).toBeGreaterThan(shown);
  // The button loads whatever remains. It is pressed in place (HTMLElement.click()), not with a pointer click: that one
  // scrolls the button into view first, which reaches the end of the list and loads the next page by itself; the last
  // page removed the button, and the click waited for it until the test timed out (stop 22, under load).
  const busy = room.sidebar.locator('[data-testid="load-more-sessions"][aria-busy="true"]');
  for (;;) {
    await expect(busy).toHaveCount(0);
    if (!(await loadMore.isVisible())) break;
    const before = await items.count();
    await loadMore.evaluate((b) => (b as HTMLButtonElement).click());
    await expect.poll(async () => (await items.count()) > before || !(await loadMore.isVisible())).toBe(true);
  }
  await expect(loadMore).toHaveCount(0);
  await expect(archived).toHaveCount(ARCHIVE_SESSIONS);
  const keys = await items.evaluateAll((els) => els.map((e) => e.getAttribute('data-session-key')));
  expect(new Set(keys).size, 'each session once').toBe(keys.length);
  await room.sessionItem(archiveSessionKey(ARCHIVE_SESSIONS - 1)).scrollIntoViewIfNeeded();
  await room.snap('sidebar-paged');

  // Still live with every page loaded: a session made elsewhere shows up at the top; the older pages stay.
  const { runId } = await rpc(request, TOKEN, 'agent', { sessionKey: freshSession, message: 'from elsewhere' });
  await rpc(request, TOKEN, 'agent.wait', { runId });
  await expect(room.sessionItem(freshSession)).toBeVisible({ timeout: 20_000 });
  await expect(archived).toHaveCount(ARCHIVE_SESSIONS);
  await expect(items).toHaveCount(keys.length + 1);
  await expect(page.getByTestId('status-bar')).toHaveAttribute('data-connection', 'connected');
});
