// The web room end to end: login, sidebar, streamed replies, tool approvals (allow and deny).
import { expect, test, TOKEN } from './fixtures';
import { openThroughProxy } from './support/proxied-room';
import { startTcpProxy } from './support/tcp-proxy';
import { rpc as rpcOf } from './support/rpc';

test.describe('login', () => {
  test('an unauthenticated visit shows the login hint', async ({ page }) => {
    await page.goto('/');
    await expect(page.getByTestId('login-hint')).toContainText('/login?token=');
    await expect(page.getByRole('textbox', { name: 'Message' })).toHaveCount(0);
  });

  test('a wrong token is refused with 401 and no cookie', async ({ request }) => {
    const res = await request.get('/login?token=wrong', { maxRedirects: 0 });
    expect(res.status()).toBe(401);
    expect(await res.text()).toContain('Unauthorized');
    expect(res.headers()['set-cookie']).toBeUndefined();
  });

  test('tRPC errors carry the CONTRACT code in data.code', async ({ request }) => {
    const headers = { authorization: `Bearer ${TOKEN}` };
    const missing = await request.get(`/api/trpc/chat.history?input=${encodeURIComponent(JSON.stringify({ sessionKey: 'agent:main:no-such' }))}`, { headers });
    expect(missing.status()).toBe(404);
    expect((await missing.json()).error.data.code).toBe('unknown_session');
    const invalid = await request.get(`/api/trpc/chat.history?input=${encodeURIComponent(JSON.stringify({ sessionKey: 'Not A Key' }))}`, { headers });
    expect(invalid.status()).toBe(400);
    const body = await invalid.json();
    expect(body.error.data.code).toBe('invalid_request');
    expect(body.error.data.issues[0].path).toBe('sessionKey');
  });

  test('the API refuses calls without the token', async ({ request }) => {
    const res = await request.get('/api/trpc/agents.list?input=%7B%7D');
    expect(res.status()).toBe(401);
    expect((await res.json()).error.data.code).toBe('unauthorized');
  });
});

test.describe('room', () => {
  test('opens the default main session and lists every agent', async ({ room, page }) => {
    await expect(room.sessionTitle).toHaveText('agent:main:main');
    for (const id of ['main', 'researcher', 'writer']) await expect(room.agent(id)).toContainText(id);
    await room.agent('researcher').click();
    await expect(room.sessionTitle).toHaveText('agent:researcher:main');
    await expect(page.getByTestId('status-bar')).toHaveAttribute('data-connection', 'connected');
    // The address follows the open session, so a reload comes back to it.
    await expect(page).toHaveURL(/\?session=agent%3Aresearcher%3Amain$/);
    await page.reload();
    await expect(room.sessionTitle).toHaveText('agent:researcher:main');
    await room.agent('main').click();
    await expect(page).toHaveURL(/\/$/);
  });

  test('sends a message and streams the reply', async ({ room }) => {
    await room.waitLive();
    // The default session is shared with other runs against the same server: look at the newest rows.
    await room.send('hello');
    await expect(room.texts('user').last()).toHaveText('hello');
    await expect(room.texts('assistant').last()).toHaveText('echo: hello');
    // The streaming bubble gives way to the written row.
    await expect(room.transcript.getByTestId('pending-bubble')).toHaveCount(0);
  });

  test('Shift+Enter adds a line instead of sending', async ({ room, freshSession }) => {
    await room.open(freshSession);
    await room.composer.fill('first');
    await room.composer.press('Shift+Enter');
    await room.composer.pressSequentially('second');
    await expect(room.composer).toHaveValue('first\nsecond');
    await room.composer.press('Enter');
    await expect(room.messages('assistant').filter({ hasText: 'echo: first\nsecond' })).toBeVisible();
  });

  test('approves a tool call once', async ({ room, freshSession }) => {
    await room.open(freshSession);
    await room.send('/tool exec {"command":"echo hi"}');
    await expect(room.approval).toBeVisible();
    await expect(room.approval).toContainText('exec');
    await expect(room.approval).toContainText('echo hi');
    await room.button('Allow once').click();
    await expect(room.approval).toHaveCount(0);
    await expect(room.toolCards('tool_result').first()).toContainText('hi');
    const reply = room.messages('assistant').filter({ hasText: 'exec: {' });
    await expect(reply).toBeVisible();
    await expect(reply).toContainText('hi');
  });

  test('denies a tool call with a reason, even with the toolbox hidden', async ({ room, page, freshSession }) => {
    await room.open(freshSession);
    await page.getByRole('button', { name: 'Hide toolbox' }).click();
    await expect(room.toolbox).toHaveCount(0);
    await room.send('/tool exec {"command":"echo nope"}');
    // Attention overrides "hidden".
    await expect(room.approval).toBeVisible();
    await room.reason.fill('not on my watch');
    await room.button('Deny').click();
    await expect(room.approval).toHaveCount(0);
    const reply = room.messages('assistant').filter({ hasText: 'exec: {' });
    await expect(reply).toContainText('denied');
    await expect(reply).toContainText('not on my watch');
    // Nothing pending: the hidden toolbox goes away again.
    await expect(room.toolbox).toHaveCount(0);
  });

  test('"Allow always" lets later calls of that tool run without asking in this session', async ({ room, freshSession }) => {
    await room.open(freshSession);
    await room.send('/tool exec {"command":"echo first"}');
    await room.button('Allow always').click();
    await expect(room.texts('assistant').filter({ hasText: 'first' })).toHaveCount(1);
    await room.send('/tool exec {"command":"echo second"}');
    await expect(room.texts('assistant').filter({ hasText: 'second' })).toHaveCount(1);
    await expect(room.approval).toHaveCount(0);
  });

  test('lists several pending approvals one at a time, oldest first', async ({ room, page, freshSession }) => {
    await room.open(freshSession);
    await page.getByRole('button', { name: 'Expand toolbox' }).click();
    await room.send('/tool exec {"command":"echo one"}\n/tool exec {"command":"echo two"}');
    await expect(room.approval).toContainText('echo one');
    await expect(page.getByTestId('approval-count')).toHaveText('1 of 2 pending');
    await expect(room.toolbox.locator('[data-testid="tool-call"][data-status="waiting"]')).toHaveCount(2);
    await room.button('Allow once').click();
    await expect(room.approval).toContainText('echo two');
    await expect(page.getByTestId('approval-count')).toHaveCount(0);
    await room.button('Allow once').click();
    await expect(room.approval).toHaveCount(0);
    const reply = room.messages('assistant').filter({ hasText: 'exec: {' }).last();
    await expect(reply).toContainText('one');
    await expect(reply).toContainText('two');
  });
});

test.describe('resilience', () => {
  test('long arguments scroll inside the approval row; the buttons stay in view', async ({ room, freshSession }) => {
    await room.open(freshSession);
    const long = Array.from({ length: 400 }, (_, i) => `echo line-${i}`).join(' && ');
    await room.send(`/tool exec ${JSON.stringify({ command: long })}`);
    await expect(room.approval).toBeVisible();
    for (const name of ['Allow once', 'Allow always', 'Deny'] as const) await expect(room.button(name)).toBeInViewport();
    await expect(room.reason).toBeInViewport();
    await room.button('Deny').click();
    await expect(room.messages('assistant').filter({ hasText: 'denied' })).toBeVisible();
  });

  test('shows a banner while disconnected and catches up after reconnecting', async ({ page, request, freshSession, baseURL, expectedConsole }) => {
    // Browse through a proxy we can cut: a real dropped connection, not an emulated one.
    expectedConsole.push(/net::ERR_(INCOMPLETE_CHUNKED_ENCODING|CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE)/);
    const proxy = await startTcpProxy(Number(new URL(baseURL!).port));
    try {
      const room = await openThroughProxy(page, proxy, freshSession, { markdown: false });
      await room.send('before');
      await expect(room.messages('assistant').filter({ hasText: 'echo: before' })).toBeVisible();

      await proxy.cut();
      await expect(page.getByTestId('connection-banner')).toBeVisible();
      // Something happens while the tab is cut off (the API request context goes straight to the server).
      const res = await request.post('/api/gateway', {
        headers: { authorization: `Bearer ${TOKEN}` },
        data: { jsonrpc: '2.0', id: 1, method: 'agent', params: { sessionKey: freshSession, message: 'while away' } },
      });
      expect(res.ok()).toBe(true);
      await proxy.restore();

      await expect(page.getByTestId('connection-banner')).toHaveCount(0, { timeout: 30_000 });
      await expect(room.messages('assistant').filter({ hasText: 'echo: while away' })).toBeVisible();
      await expect(room.messages('assistant').filter({ hasText: 'echo: before' })).toHaveCount(1);
    } finally {
      await proxy.close();
    }
  });
});

test.describe('history', () => {
  test('a reload shows the transcript from history, older pages on demand', async ({ room, request, freshSession }) => {
    // Seed 30 turns (60 rows: more than one 50-row page) through the JSON-RPC gateway.
    const rpc = (method: string, params: object) => rpcOf(request, TOKEN, method, params);
    for (let i = 0; i < 30; i++) {
      const { runId } = await rpc('agent', { sessionKey: freshSession, message: `turn ${i}` });
      expect((await rpc('agent.wait', { runId })).status).toBe('ok');
    }
    await room.open(freshSession);
    await expect(room.messages('assistant').filter({ hasText: 'echo: turn 29' })).toBeVisible();
    await expect(room.texts('user').filter({ hasText: /^turn 0$/ })).toHaveCount(0);
    // The reader scrolls up: near the top the older page loads. (A click on "Load older messages" at the top raced that
    // load: the click's own scroll into view started it, the last page removed the button, and the click waited for it
    // until the test timed out — stop 22, under load.)
    await expect(room.page.getByTestId('load-older')).toBeAttached();
    await room.transcript.hover();
    await room.page.mouse.wheel(0, -100_000);
    await expect(room.texts('user').filter({ hasText: /^turn 0$/ })).toHaveCount(1);
    await expect(room.page.getByTestId('load-older')).toHaveCount(0);
    await expect(room.messages('user')).toHaveCount(30);
    // Live rows still append after paging.
    await room.send('after paging');
    await expect(room.messages('assistant').filter({ hasText: 'echo: after paging' })).toBeVisible();
    await room.page.reload();
    await room.waitLive();
    await expect(room.messages('assistant').filter({ hasText: 'echo: after paging' })).toBeVisible();
  });
});

test('the login cookie is http-only', async ({ page, context }) => {
  await page.goto(`/login?token=${TOKEN}`);
  const cookie = (await context.cookies()).find((c) => c.name === 'crosstalk_token');
  expect(cookie?.httpOnly).toBe(true);
  expect(cookie?.sameSite).toBe('Lax');
});
