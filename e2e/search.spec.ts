// The sidebar's transcript search (CONTRACT §3 sessions.search, §7): a whole word ranks above its completions, "More
// results" pages on by the search's cursor, and results of an earlier query show as such while the next one is asked.
import { expect, test, TOKEN } from './fixtures';
import { rpc } from './support/rpc';

/** Runs `/reply <text>` in `sessionKey` to its end: the user's row and the reply both hold the text. */
async function reply(request: Parameters<typeof rpc>[0], sessionKey: string, text: string): Promise<void> {
  await rpc(request, TOKEN, 'agent.wait', { runId: (await rpc<{ runId: string }>(request, TOKEN, 'agent', { sessionKey, message: `/reply ${text}` })).runId });
}

// Probe U: "scalemark7" found its own session 64th of 64, after every newer "scalemark7…", and the list showed 20.
test('a whole word ranks above its completions, and "More results" pages on', async ({ room, page, request, freshSession }) => {
  const word = `qm${Date.now().toString(36)}`;
  await reply(request, `${freshSession}-exact`, word);
  for (let i = 0; i < 12; i++) await reply(request, `${freshSession}-more`, `${word}${i} and ${word}x${i}`);
  // 2 rows of the word itself, 24 of its completions.
  await expect.poll(async () => (await rpc<{ results: unknown[] }>(request, TOKEN, 'sessions.search', { query: word, limit: 100 })).results.length).toBe(26);
  await room.open(freshSession);
  await page.getByRole('searchbox', { name: 'Search', exact: true }).fill(word);
  const results = page.getByTestId('search-results');
  const hits = results.getByTestId('search-result');
  await expect(hits).toHaveCount(20);
  for (const i of [0, 1]) await expect(hits.nth(i)).toHaveAttribute('data-session-key', `${freshSession}-exact`);
  await results.getByRole('button', { name: 'More results' }).click();
  await expect(hits).toHaveCount(26);
  await expect(results.getByRole('button', { name: 'More results' })).toHaveCount(0);
  // No result twice.
  const ids = await hits.evaluateAll((els) => els.map((e) => e.getAttribute('data-message-id')));
  expect(new Set(ids).size).toBe(26);
});

// Probe U: while the next query debounced or was asked, the last results stayed as they were, marked with the new
// query's words. They stay clickable, but show as stale (aria-busy, dimmed) and keep their own words marked.
test('results of the last query show as stale, with their own words marked, until the next query answers', async ({ room, page, request, freshSession }) => {
  const word = `qs${Date.now().toString(36)}`;
  await reply(request, freshSession, `the ${word} is here`);
  await page.clock.install();
  await room.open(freshSession);
  const box = page.getByRole('searchbox', { name: 'Search', exact: true });
  const results = page.getByTestId('search-results');
  await box.fill(word);
  await expect(results.getByTestId('search-result')).not.toHaveCount(0);
  await expect(results).toHaveAttribute('aria-busy', 'false');
  await expect(results.locator('mark').first()).toHaveText(word);

  // The next query's request is held until the test lets it go.
  const next = `zz${word}`;
  let release!: () => void;
  let asked = false;
  const held = new Promise<void>((resolve) => (release = resolve));
  await page.route(/\/api\/trpc\/[^?]*sessions\.search/, async (route) => {
    if (decodeURIComponent(route.request().url()).includes(next)) {
      asked = true;
      await held;
    }
    await route.continue();
  });
  // Typing, before the debounce's timer (page time stands still).
  await page.clock.pauseAt(Date.now() + 1_000);
  await box.fill(next);
  await expect(results).toHaveAttribute('data-stale', 'true');
  await expect(results).toHaveAttribute('aria-busy', 'true');
  await expect(results.getByTestId('search-result').first()).toBeEnabled();
  // The request out (held): the old results, still marked with their own query's word, not the new ones.
  await page.clock.resume();
  await expect.poll(() => asked).toBe(true);
  await expect(results).toHaveAttribute('data-stale', 'true');
  await expect(results).toHaveAttribute('data-query', word);
  await expect(results.locator('mark').first()).toHaveText(word);
  await expect(results).toHaveAttribute('aria-busy', 'true');
  release();
  await expect(results).toContainText('No messages match.');
  await expect(results).toHaveAttribute('data-stale', 'false');
  await expect(results).toHaveAttribute('aria-busy', 'false');
});
