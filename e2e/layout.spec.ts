// Layout and keyboard: the approval row in the toolbox (collapsed, expanded, narrow window), a/d and j/k, themes,
// the sidebar's filters and search, and the event inspector.
import { expect, test } from './fixtures';

test('the approval row is visible collapsed and expanded, below the last tool card when expanded', async ({ room, page, freshSession }) => {
  await room.open(freshSession);
  // One finished call first, so the expanded list has cards above the pending one.
  await room.send('/tool exec {"command":"echo first"}');
  await room.button('Allow once').click();
  await expect(room.texts('assistant').filter({ hasText: 'first' })).toHaveCount(1);
  await room.send('/tool exec {"command":"echo second"}');
  await expect(room.approval).toBeVisible();
  await expect(room.toolbox).toHaveAttribute('data-mode', 'collapsed');
  await expect(room.approval).toBeInViewport();
  await room.snap('approval-collapsed');

  await page.getByRole('button', { name: 'Expand toolbox' }).click();
  await expect(room.toolbox).toHaveAttribute('data-mode', 'expanded');
  await expect(room.approval).toBeInViewport();
  const cards = room.toolbox.getByTestId('tool-call');
  await expect(cards).toHaveCount(2);
  const lastCard = await cards.last().boundingBox();
  const row = await room.approval.boundingBox();
  expect(row!.y).toBeGreaterThanOrEqual(lastCard!.y + lastCard!.height - 1);
  await room.snap('approval-expanded');
  await room.button('Allow once').click();
  await expect(room.approval).toHaveCount(0);
});

test('a narrow 390-px window keeps the approval row reachable', async ({ room, page, freshSession }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await room.open(freshSession);
  await expect(room.sidebar).toBeHidden();
  const long = Array.from({ length: 200 }, (_, i) => `echo narrow-${i}`).join(' && ');
  await room.send(`/tool exec ${JSON.stringify({ command: long })}`);
  await expect(room.approval).toBeVisible();
  for (const name of ['Allow once', 'Allow always', 'Deny'] as const) await expect(room.button(name)).toBeInViewport();
  await expect(room.reason).toBeInViewport();
  await expect(room.composer).toBeInViewport();
  // Nothing scrolls sideways.
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await room.snap('narrow-approval');
  // The sessions list opens as a drawer.
  await page.getByRole('button', { name: 'Show sessions' }).click();
  await expect(room.sidebar).toBeVisible();
  await room.snap('narrow-sidebar');
  await page.getByRole('button', { name: 'Close sessions' }).click();
  // The board covers the room here: it takes the focus, Escape closes it and the focus goes back to "Board".
  // Before: the focus stayed on the room behind it, and Escape did nothing.
  const board = page.getByTestId('open-board');
  await board.click();
  const panel = page.getByTestId('side-panel');
  await expect(panel).toBeFocused();
  await page.keyboard.press('Tab');
  expect(await panel.evaluate((el) => el.contains(document.activeElement))).toBe(true);
  await page.keyboard.press('Escape');
  await expect(panel).toHaveCount(0);
  await expect(board).toBeFocused();
  await room.button('Allow once').click();
  await expect(room.approval).toHaveCount(0);
});

test('keyboard: a / d on the focused approval, j / k through sessions', async ({ room, page, freshSession }) => {
  await room.open(freshSession);
  await room.send('/tool exec {"command":"echo by-key"}');
  await room.approval.focus();
  await page.keyboard.press('a');
  await expect(room.approval).toHaveCount(0);
  await expect(room.texts('assistant').filter({ hasText: 'by-key' })).toHaveCount(1);

  await room.send('/tool exec {"command":"echo refused"}');
  await room.reason.fill('keyboard says no');
  await room.approval.focus();
  await page.keyboard.press('d');
  await expect(room.messages('assistant').filter({ hasText: 'keyboard says no' })).toBeVisible();

  // j / k move through the sidebar's sessions in display order (not while typing).
  await room.transcript.focus();
  const order = await room.sidebar.getByTestId('session-item').evaluateAll((els) => els.map((e) => e.getAttribute('data-session-key')));
  const at = order.indexOf(freshSession);
  expect(at).toBeGreaterThanOrEqual(0);
  await page.keyboard.press('j');
  const next = order[Math.min(at + 1, order.length - 1)]!;
  await expect(room.sessionTitle).toHaveText(next);
  await page.keyboard.press('k');
  await expect(room.sessionTitle).toHaveText(freshSession);
  await room.composer.focus();
  await page.keyboard.press('j');
  await expect(room.sessionTitle).toHaveText(freshSession);
});

test('light and dark themes: the OS preference, then the toggle, kept across reloads', async ({ room, page }) => {
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.reload();
  await expect(page.locator('html')).toHaveClass(/\bdark\b/);
  await room.snap('theme-dark');
  await page.getByRole('button', { name: 'Switch to light theme' }).click();
  await expect(page.locator('html')).not.toHaveClass(/\bdark\b/);
  await page.reload();
  await expect(page.locator('html')).not.toHaveClass(/\bdark\b/);
  await room.snap('theme-light');
  await page.getByRole('button', { name: 'Switch to dark theme' }).click();
  await expect(page.locator('html')).toHaveClass(/\bdark\b/);
});

test('sidebar: grouped by agent, kind filters, search, running marker', async ({ room, page, freshSession }) => {
  await room.open(freshSession);
  // A run that lasts until this test stops it: the running marker is there for as long as the test looks (a 1.5 s sleep
  // could end before a loaded machine painted the marker).
  await room.send('/sleep 60000\n/reply slept');
  await expect(room.sessionItem(freshSession)).toHaveAttribute('data-running', 'true');
  await room.snap('sidebar-running');
  await expect(room.sidebar.locator('[data-testid="agent-group"][data-agent-id="main"]').locator(`[data-testid="session-item"][data-session-key="${freshSession}"]`)).toBeVisible();
  await page.getByRole('button', { name: 'Delegate', exact: true }).click();
  await expect(room.sessionItem(freshSession)).toHaveCount(0);
  await expect(room.sidebar.locator('[data-testid="session-item"]:not([data-kind="subagent"])')).toHaveCount(0);
  await page.getByRole('button', { name: 'Delegate', exact: true }).click();
  // Searched by the key's unique token (not its tail, the title slug: every repetition of this test, under
  // --repeat-each, leaves a session with the same slug on the shared server).
  const token = /^agent:main:e2e-([a-z0-9]+)-/.exec(freshSession)![1]!;
  await page.getByRole('searchbox', { name: 'Search', exact: true }).fill(token);
  await expect(room.sidebar.getByTestId('session-item')).toHaveCount(1);
  await expect(room.sessionItem(freshSession)).toBeVisible();
  // Every configured agent stays listed.
  for (const id of ['main', 'researcher', 'writer']) await expect(room.agent(id)).toBeVisible();
  await page.getByRole('button', { name: 'Stop', exact: true }).click();
  await expect(room.sessionItem(freshSession)).not.toHaveAttribute('data-running', 'true');
});

test('event inspector: streams raw events, pausable and filterable', async ({ room, page, freshSession }) => {
  await room.open(freshSession);
  await page.getByRole('button', { name: 'Event inspector', exact: true }).click();
  await expect(room.inspector).toBeVisible();
  await room.send('inspect me');
  await expect(room.texts('assistant').filter({ hasText: 'echo: inspect me' })).toBeVisible();
  const rows = room.inspector.getByTestId('event-row');
  await expect(room.inspector.locator('[data-testid="event-row"][data-stream="lifecycle"][data-phase="end"]')).toHaveCount(1);
  const count = await rows.count();

  await room.inspector.getByRole('button', { name: 'Pause events' }).click();
  await room.send('while paused');
  await expect(room.texts('assistant').filter({ hasText: 'echo: while paused' })).toBeVisible();
  await expect(rows).toHaveCount(count);
  await expect(room.inspector.getByTestId('inspector-newer')).toBeVisible();
  await room.inspector.getByRole('button', { name: 'Resume events' }).click();
  await expect(room.inspector.locator('[data-testid="event-row"][data-stream="lifecycle"][data-phase="end"]')).toHaveCount(2);

  await room.inspector.getByRole('button', { name: 'lifecycle', exact: true }).click();
  await expect(room.inspector.locator('[data-testid="event-row"]:not([data-stream="lifecycle"])')).toHaveCount(0);
  await room.inspector.getByRole('searchbox', { name: 'Filter events' }).fill('end');
  await expect(room.inspector.locator('[data-testid="event-row"]:not([data-phase="end"])')).toHaveCount(0);
  await expect(rows).not.toHaveCount(0);
  await room.snap('event-inspector');
});

test('keyboard: the session list is one Tab stop, the arrows move through it, and a skip link leads to the conversation', async ({ room, page, freshSession }) => {
  await room.open(freshSession);
  await room.send('hello');
  await expect(room.texts('assistant').filter({ hasText: 'echo: hello' })).toHaveCount(1);
  const row = room.sessionItem(freshSession);
  await expect(row).toBeVisible();
  const items = room.sidebar.getByTestId('session-item');
  // One row in the Tab order, the open session's (before: every row was one, hundreds of Tab presses to get past).
  await expect.poll(() => items.evaluateAll((els) => els.filter((e) => (e as HTMLElement).tabIndex === 0).map((e) => e.getAttribute('data-session-key')))).toEqual([freshSession]);
  const order = await items.evaluateAll((els) => els.map((e) => e.getAttribute('data-session-key')));
  expect(order.length).toBeGreaterThan(1);
  const at = order.indexOf(freshSession);
  const below = order[at + 1] ?? order[at - 1]!;
  const focused = () => page.evaluate(() => document.activeElement?.getAttribute('data-session-key') ?? null);

  // The arrows move the focus, not the selection; Enter opens the focused row, which becomes the Tab stop.
  await row.focus();
  await page.keyboard.press(order[at + 1] ? 'ArrowDown' : 'ArrowUp');
  expect(await focused()).toBe(below);
  await expect(room.sessionTitle).toHaveText(freshSession);
  await page.keyboard.press('Enter');
  await expect(room.sessionTitle).toHaveText(below);
  await expect(room.sessionItem(below)).toHaveAttribute('tabindex', '0');
  await expect(row).toHaveAttribute('tabindex', '-1');
  await page.keyboard.press('Home');
  expect(await focused()).toBe(order[0]);
  await page.keyboard.press('End');
  expect(await focused()).toBe(order.at(-1));
  // Tab leaves the list from any row: the next stop is not a session row.
  await page.keyboard.press('Tab');
  expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).not.toBe('session-item');

  // The skip link is the page's first Tab stop and takes the focus to the conversation.
  const first = await page.evaluate(() => document.querySelector('a[href], button:not([disabled]), input, textarea, select, [tabindex]:not([tabindex="-1"])')?.getAttribute('data-testid'));
  expect(first).toBe('skip-link');
  const skip = page.getByTestId('skip-link');
  await skip.focus();
  await expect(skip).toBeVisible();
  await page.keyboard.press('Enter');
  expect(await page.evaluate(() => document.activeElement?.id)).toBe('conversation');
  expect(new URL(page.url()).hash).toBe('');
});

test('keyboard: deciding from the focused approval row keeps the focus on the next item; hiding the toolbox focuses "Show toolbox"', async ({ room, page, freshSession }) => {
  await room.open(freshSession);
  await room.send('/tool exec {"command":"echo one"}\n/tool exec {"command":"echo two"}');
  await expect(room.approval.getByTestId('approval-count')).toHaveText('1 of 2 pending');
  await room.approval.focus();
  await page.keyboard.press('a');
  // Before: the next item's row was a new element, and the focus fell to the page's body.
  await expect(room.approval.getByTestId('approval-count')).toHaveCount(0);
  await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('approval-attachment');
  await page.keyboard.press('a');
  await expect(room.approval).toHaveCount(0);
  await expect(room.texts('assistant').filter({ hasText: 'two' })).toHaveCount(1);

  await page.getByRole('button', { name: 'Hide toolbox' }).focus();
  await page.keyboard.press('Enter');
  // Before: the focus fell to the body with the button it was on.
  await expect(page.getByRole('button', { name: 'Show toolbox' })).toBeFocused();
});
