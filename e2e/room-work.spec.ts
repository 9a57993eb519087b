// The room for real work (issue 15): Markdown, merged tool cards, Stop, the approvals inbox, search, the session bar, 390 px.
import fs from 'node:fs';
import type { Page } from '@playwright/test';
import { expect, test, TOKEN } from './fixtures';
import type { RoomPage } from './pages/room-page';
import { rpc } from './support/rpc';

// Screenshots for the README's control-room section, refreshed by every e2e run.
const SHOTS = 'docs/screenshots';
const shot = async (page: Page, name: string) => {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: `${SHOTS}/${name}.png` });
};

const assistant = (room: RoomPage, text: string) => room.messages('assistant').filter({ hasText: text }).getByTestId('message-text');

test.describe('markdown', () => {
  test('bold, a list, a code block and a table render; a <script> in a reply stays text', async ({ room, page, freshSession }) => {
    await room.open(freshSession);
    const md = ['**strong words** here', '', '- first item', '- second item', '', '```js', 'const answer = 42;', '```', '', '| col a | col b |', '| --- | --- |', '| 1 | 2 |', '', '<script>window.__pwned = 1</script> <b>not bold</b>'].join('\n');
    await room.send(md);
    const body = assistant(room, 'strong words');
    await expect(body.locator('strong', { hasText: 'strong words' })).toHaveCount(1);
    await expect(body.locator('li')).toHaveText(['first item', 'second item']);
    await expect(body.locator('table th')).toHaveText(['col a', 'col b']);
    await expect(body.locator('table td')).toHaveText(['1', '2']);
    const code = body.locator('pre');
    await expect(code).toContainText('const answer = 42;');
    await expect(body.getByRole('button', { name: /copy/i }).first()).toBeVisible();
    // HTML from the model is text: shown literally, never inserted.
    await expect(body).toContainText('<script>window.__pwned = 1</script>');
    await expect(body).toContainText('<b>not bold</b>');
    await expect(body.locator('script')).toHaveCount(0);
    await expect(body.locator('b')).toHaveCount(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    await shot(page, 'markdown');
  });

  test('a link in a reply asks first, in a modal dialog that takes the focus, keeps it, and gives it back on Escape', async ({ room, page, freshSession }) => {
    await room.open(freshSession);
    await room.send('see [the docs](https://docs.example/guide) now');
    const link = assistant(room, 'the docs').getByRole('button', { name: 'the docs' });
    await link.click();
    const dialog = page.getByRole('dialog', { name: 'Open external link?' });
    await expect(dialog).toBeVisible();
    await expect(dialog.getByTestId('link-confirm-url')).toHaveText('https://docs.example/guide');
    // The focus is inside (on "Open link"), and Tab reaches nothing of the page behind it (past the last button a modal
    // dialog hands the focus to the browser's own UI: document.body here, then back into the dialog).
    await expect(dialog.getByRole('button', { name: 'Open link' })).toBeFocused();
    const inside: boolean[] = [];
    for (let i = 0; i < 5; i++) {
      await page.keyboard.press('Tab');
      const where = await dialog.evaluate((d) => (d.contains(document.activeElement) ? 'dialog' : document.activeElement === document.body ? 'browser' : 'page'));
      expect(where).not.toBe('page');
      inside.push(where === 'dialog');
    }
    expect(inside.filter(Boolean).length).toBeGreaterThanOrEqual(3);
    await page.keyboard.press('Escape');
    await expect(dialog).toHaveCount(0);
    await expect(link).toBeFocused();
    // Close does the same; nothing opened.
    await link.click();
    await page.getByRole('dialog', { name: 'Open external link?' }).getByRole('button', { name: 'Close' }).click();
    await expect(page.getByRole('dialog')).toHaveCount(0);
    expect(page.context().pages()).toHaveLength(1);
  });

  test('the server parses the Markdown of the newest rows only; the older ones are rich once hydrated', async ({ room, page, request, freshSession }) => {
    // 10 turns: 20 rows, 10 Markdown replies. The first screen's 6 rows (3 replies) come parsed in the page's HTML.
    for (let i = 0; i < 10; i++) {
      const { runId } = await rpc<{ runId: string }>(request, TOKEN, 'agent', { sessionKey: freshSession, message: `**bold ${i}** here` });
      await rpc(request, TOKEN, 'agent.wait', { runId });
    }
    const html = await (await request.get(`/?session=${encodeURIComponent(freshSession)}`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    const parsed = [...html.matchAll(/<strong[^>]*>bold (\d+)<\/strong>/g)].map((m) => Number(m[1]));
    expect(parsed.sort((a, b) => a - b)).toEqual([7, 8, 9]);
    // The older replies are in the HTML as their text (offscreen at first paint), not missing.
    expect(html).toContain('echo: **bold 0** here');
    await room.open(freshSession);
    await expect(room.texts('assistant').locator('strong')).toHaveText(Array.from({ length: 10 }, (_, i) => `bold ${i}`));
    await expect(room.texts('assistant').locator('.markdown-plain')).toHaveCount(0);
  });

  test('a Markdown reply streams in with a layout shift under 0.1', async ({ room, page, freshSession }) => {
    await room.open(freshSession);
    await room.send('warm up');
    await expect(room.texts('assistant').filter({ hasText: 'echo: warm up' })).toHaveCount(1);
    await page.evaluate(() => {
      const w = window as unknown as { __cls: number };
      w.__cls = 0;
      new PerformanceObserver((list) => {
        for (const e of list.getEntries() as Array<PerformanceEntry & { value: number; hadRecentInput: boolean }>) if (!e.hadRecentInput) w.__cls += e.value;
      }).observe({ type: 'layout-shift', buffered: false });
    });
    // The pause puts the stream outside the input window that layout-shift scoring ignores.
    await room.send(['/sleep 700', '/reply ## Plan', '/reply **Steps** to take:', '/reply 1. read the *notes*', '/reply 2. run `make`', '/reply ```sh', '/reply make test', '/reply ```', '/reply | a | b |', '/reply | - | - |', '/reply | 1 | 2 |'].join('\n'));
    await expect(assistant(room, 'Steps').locator('table')).toBeVisible();
    await page.waitForTimeout(300);
    const cls = await page.evaluate(() => (window as unknown as { __cls: number }).__cls);
    test.info().annotations.push({ type: 'layout-shift', description: `CLS ${cls.toFixed(4)}` });
    expect(cls).toBeLessThan(0.1);
  });

  test('a streamed reply with an unfinished code fence renders without errors', async ({ room, freshSession }) => {
    await room.open(freshSession);
    await room.send('/sleep 300\n/reply Here is code:\n/reply ```python\n/reply print("never closed")');
    const body = assistant(room, 'Here is code:');
    await expect(body.locator('pre')).toContainText('print("never closed")');
    await expect(body).not.toContainText('```');
    // The fixture fails the test on any page or console error.
  });
});

test('one card per tool call: call and result merged, exec as a terminal, the toolbox lists the same card', async ({ room, page, freshSession }) => {
  await room.open(freshSession);
  await room.send('/tool exec {"command":"echo merged-out; echo merged-err >&2; exit 3"}');
  await expect(room.approval).toBeVisible();
  const card = room.transcript.getByTestId('tool-card');
  await expect(card).toHaveCount(1);
  await expect(card).toHaveAttribute('data-status', 'waiting');
  await expect(card.getByTestId('tool-card-status')).toHaveText('waiting for approval');
  await room.button('Allow once').click();
  await expect(card).toHaveAttribute('data-status', 'failed');
  await expect(card).toHaveCount(1);
  await card.locator('summary').click();
  await expect(card.getByTestId('exec-command')).toHaveText('echo merged-out; echo merged-err >&2; exit 3');
  await expect(card.getByTestId('exec-stdout')).toHaveText('merged-out\n');
  await expect(card.getByTestId('exec-stderr')).toHaveText('merged-err\n');
  await expect(card.getByTestId('exec-exit')).toHaveText('exit code 3');
  await expect(card.getByTestId('tool-card-duration')).toHaveText(/\d+(\.\d)? (ms|s)/);
  // The toolbox shows the same card.
  await room.page.getByRole('button', { name: 'Expand toolbox' }).click();
  const boxed = room.toolbox.getByTestId('tool-call');
  await expect(boxed).toHaveCount(1);
  await expect(boxed).toHaveAttribute('data-status', 'failed');
  await expect(boxed.getByTestId('tool-card')).toHaveAttribute('data-call-id', (await card.getAttribute('data-call-id'))!);
  // A JSON tool: arguments and result pretty-printed; it folds and unfolds.
  await room.send('/tool sessions_list {"limit":1}');
  const json = room.transcript.locator('[data-testid="tool-card"][data-tool="sessions_list"]');
  await expect(json).toHaveAttribute('data-status', 'done');
  await json.locator('summary').click();
  await expect(json.getByLabel('sessions_list arguments')).toHaveText('{\n  "limit": 1\n}');
  await expect(json.getByLabel('sessions_list result')).toContainText('"sessions": [');
  await shot(page, 'tool-cards');
  await json.locator('summary').click();
  await expect(json.getByLabel('sessions_list result')).toBeHidden();
});

test('Stop ends a /sleep 30000 run, visibly cancelled', async ({ room, page, freshSession }) => {
  await room.open(freshSession);
  const stop = page.getByRole('button', { name: 'Stop', exact: true });
  await expect(stop).toHaveCount(0);
  await room.send('/sleep 30000\n/reply too late');
  await expect(stop).toBeVisible();
  await stop.click();
  await expect(room.transcript.getByTestId('run-cancelled')).toHaveText(/Run cancelled/);
  await expect(stop).toHaveCount(0);
  await expect(room.sessionItem(freshSession)).not.toHaveAttribute('data-running', 'true');
  await expect(room.texts('assistant').filter({ hasText: 'too late' })).toHaveCount(0);
});

test('a run interrupted by a newer message says so, not "Run failed"', async ({ room, page, request, freshSession }) => {
  await room.open(freshSession);
  await room.send('/sleep 30000\n/reply too late');
  await expect(page.getByRole('button', { name: 'Stop', exact: true })).toBeVisible();
  await rpc(request, TOKEN, 'agent', { sessionKey: freshSession, message: '/reply the newer one', queueMode: 'interrupt' });
  await expect(room.transcript.getByTestId('run-interrupted')).toHaveText(/Run interrupted/);
  await expect(room.texts('assistant').filter({ hasText: 'the newer one' })).toHaveCount(1);
  await expect(room.transcript.getByTestId('run-error')).toHaveCount(0);
});

test("the inbox lists a grand-delegate's approval with its parent chain; allowing it there runs the tool", async ({ room, page, freshSession }) => {
  await room.open(freshSession);
  const inner = JSON.stringify({ agent_id: 'writer', prompt: '/tool exec {"command":"echo from-grandchild"}' });
  const outer = JSON.stringify({ agent_id: 'researcher', prompt: `/tool delegate_agent ${inner}` });
  await room.send(`/tool delegate_agent ${outer}`);
  const button = page.getByRole('button', { name: 'Approvals', exact: true });
  await expect(button.getByTestId('approvals-count')).not.toHaveText('0');
  await button.click();
  const dialog = page.getByRole('dialog', { name: 'Approvals' });
  await expect(dialog).toBeVisible();
  const item = dialog.getByTestId('inbox-approval').filter({ has: page.locator(`[data-testid="inbox-chain"] [data-session-key="${freshSession}"]`) });
  await expect(item).toHaveCount(1);
  // Each session of the chain by its key, root first.
  await expect(item.getByRole('group', { name: 'Parent chain' })).toHaveText(new RegExp(`^${freshSession} → agent:researcher:subagent:\\S+ → agent:writer:subagent:\\S+$`));
  await expect(item.getByTestId('inbox-trust')).toHaveText('trust: operator');
  await expect(item.getByTestId('inbox-session')).toHaveText(/^agent:writer:subagent:/);
  await expect(item).toContainText('echo from-grandchild');
  await expect(item.getByRole('textbox', { name: 'Reason', exact: true })).toBeVisible();
  await shot(page, 'approvals-inbox');
  await item.getByRole('button', { name: 'Allow once', exact: true }).click();
  await expect(item).toHaveCount(0);
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  await expect(room.texts('assistant').filter({ hasText: 'from-grandchild' }).first()).toBeVisible();
});

test('the inbox decides with the keyboard: d on the focused one denies it', async ({ room, page, freshSession, request }) => {
  await room.open(freshSession);
  await room.send('/tool exec {"command":"echo key-deny"}');
  await expect(room.approval).toBeVisible();
  await page.getByRole('button', { name: /^Approvals/ }).click();
  const dialog = page.getByRole('dialog', { name: 'Approvals' });
  const item = dialog.locator(`[data-testid="inbox-approval"][data-session-key="${freshSession}"]`);
  await item.focus();
  await page.keyboard.press('d');
  await expect(item).toHaveCount(0);
  await page.keyboard.press('Escape');
  await expect(room.transcript.locator('[data-testid="tool-card"]')).toHaveAttribute('data-status', 'denied');
  const left = await rpc<{ approvals: unknown[] }>(request, TOKEN, 'approvals.list', { sessionKey: freshSession });
  expect(left.approvals).toEqual([]);
});

test('search finds a word from a tool result and opens the session at that row, paging older rows in', async ({ room, page, freshSession, request }) => {
  const word = `zebra${Date.now().toString(36)}`;
  // A tool result with the word, then enough rows after it that it is not on the first page.
  const started = await rpc<{ runId: string }>(request, TOKEN, 'agent', { sessionKey: freshSession, message: `/tool exec {"command":"echo ${word}-stripes"}` });
  let approvalId: string | undefined;
  await expect(async () => {
    approvalId = (await rpc<{ approvals: Array<{ approvalId: string }> }>(request, TOKEN, 'approvals.list', { sessionKey: freshSession })).approvals[0]?.approvalId;
    expect(approvalId).toBeTruthy();
  }).toPass();
  await rpc(request, TOKEN, 'approvals.resolve', { approvalId, decision: 'allow_once' });
  await rpc(request, TOKEN, 'agent.wait', { runId: started.runId });
  for (let i = 0; i < 30; i++) {
    const r = await rpc<{ runId: string }>(request, TOKEN, 'agent', { sessionKey: freshSession, message: `filler ${i}` });
    await rpc(request, TOKEN, 'agent.wait', { runId: r.runId });
  }
  await room.open('agent:main:main');
  await page.getByRole('searchbox', { name: 'Search', exact: true }).fill(word);
  const result = page.getByTestId('search-result').filter({ hasText: 'tool_result' });
  await expect(result).toHaveCount(1);
  await expect(result.getByTestId('search-snippet')).toContainText(`${word}-stripes`);
  await shot(page, 'search');
  await result.click();
  await expect(room.sessionTitle).toHaveText(freshSession);
  const focused = room.transcript.locator('[data-focused="true"]');
  await expect(focused).toBeVisible();
  await expect(focused.getByTestId('tool-card')).toHaveAttribute('data-tool', 'exec');
  await expect(focused).toBeInViewport();
});

test('the session bar: model changed through sessions.patch, queue mode, export as Markdown and JSON', async ({ room, page, freshSession, request }) => {
  await room.open(freshSession);
  await room.send('hello export');
  await expect(room.texts('assistant').filter({ hasText: 'echo: hello export' })).toHaveCount(1);
  const model = page.getByRole('combobox', { name: 'Model', exact: true });
  await expect(model).toHaveValue('scripted');
  await page.getByRole('combobox', { name: 'Queue mode', exact: true }).selectOption('followup');
  await expect(async () => {
    const s = await rpc<{ sessions: Array<{ sessionKey: string }> }>(request, TOKEN, 'sessions.list', { limit: 200 });
    expect(s.sessions.some((x) => x.sessionKey === freshSession)).toBe(true);
  }).toPass();
  const [md] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export as Markdown' }).click()]);
  const mdText = fs.readFileSync((await md.path())!, 'utf8');
  expect(mdText).toContain(`# ${freshSession}`);
  expect(mdText).toContain('echo: hello export');
  const [js] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export as JSON' }).click()]);
  const data = JSON.parse(fs.readFileSync((await js.path())!, 'utf8'));
  expect(data.sessionKey).toBe(freshSession);
  expect(data.messages.map((m: { content: string }) => m.content)).toEqual(['hello export', 'echo: hello export']);
  await model.fill('openai:gpt-4o-mini');
  await model.press('Enter');
  await expect(async () => {
    const s = await rpc<{ sessions: Array<{ sessionKey: string; model: string }> }>(request, TOKEN, 'sessions.list', { limit: 200 });
    expect(s.sessions.find((x) => x.sessionKey === freshSession)?.model).toBe('openai:gpt-4o-mini');
  }).toPass();
  await shot(page, 'session-bar');
});

test('390 px: the inbox and the tool cards fit the narrow window', async ({ room, page, freshSession }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await room.open(freshSession);
  await room.send(`/tool exec ${JSON.stringify({ command: `echo ${'wide-'.repeat(40)}` })}`);
  await expect(room.approval).toBeVisible();
  const card = room.transcript.getByTestId('tool-card');
  await expect(card).toBeVisible();
  const box = (await card.boundingBox())!;
  expect(box.x).toBeGreaterThanOrEqual(0);
  expect(box.x + box.width).toBeLessThanOrEqual(390);
  await page.getByRole('button', { name: /^Approvals/ }).click();
  const dialog = page.getByRole('dialog', { name: 'Approvals' });
  await expect(dialog).toBeVisible();
  const d = (await dialog.boundingBox())!;
  expect(d.x).toBeGreaterThanOrEqual(0);
  expect(d.x + d.width).toBeLessThanOrEqual(390);
  const item = dialog.locator(`[data-testid="inbox-approval"][data-session-key="${freshSession}"]`);
  await expect(item.getByRole('button', { name: 'Deny', exact: true })).toBeInViewport();
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await shot(page, 'narrow-inbox');
  await item.getByRole('button', { name: 'Allow once', exact: true }).click();
  await page.keyboard.press('Escape');
  await expect(card).toHaveAttribute('data-status', 'done');
  await shot(page, 'narrow-cards');
});

test('a decision that comes after someone else’s says so, in the row and in the dialog, and the other decision stands', async ({ room, page, freshSession, request, expectedConsole }) => {
  expectedConsole.push(/status of 409 \(Conflict\)/); // the server's already_resolved answer to the room's late decision
  await room.open(freshSession);
  // Someone else decides first: the room's own request reaches the server just after another client's allow_once.
  const decideFirst = async (route: import('@playwright/test').Route) => {
    // The request's input, batched or not, with or without a transformer's envelope.
    const approvalId = /"approvalId":"([^"]+)"/.exec(route.request().postData() ?? '')?.[1];
    if (approvalId) await rpc(request, TOKEN, 'approvals.resolve', { approvalId, decision: 'allow_once' });
    await route.continue();
  };
  await page.route(/\/api\/trpc\/[^?]*approvals\.resolve/, decideFirst);

  await room.send('/tool exec {"command":"echo first-come"}');
  await expect(room.approval).toBeVisible();
  await room.button('Deny').click();
  // Before: the row went away without a word, and the person never learnt that their Deny did not apply.
  const notice = page.getByTestId('approval-stale');
  await expect(notice).toHaveText('It was already allowed elsewhere: your Deny did not apply.');
  await expect(room.approval).toHaveCount(0);
  await expect(room.texts('assistant').filter({ hasText: 'first-come' })).toHaveCount(1);

  // The same in the Approvals dialog.
  await room.send('/tool exec {"command":"echo second-come"}');
  await expect(room.approval).toBeVisible();
  await page.getByRole('button', { name: /^Approvals/ }).click();
  const dialog = page.getByRole('dialog', { name: 'Approvals' });
  const item = dialog.locator(`[data-testid="inbox-approval"][data-session-key="${freshSession}"]`);
  await item.getByRole('button', { name: 'Deny', exact: true }).click();
  await expect(dialog.getByTestId('approval-stale')).toHaveText('exec was already allowed elsewhere: your Deny did not apply.');
  await expect(item).toHaveCount(0);
  await page.keyboard.press('Escape');
  await page.unroute(/\/api\/trpc\/[^?]*approvals\.resolve/, decideFirst);
});
