// A hard server restart mid-run: the room shows the banner, reconnects, the paused run finishes, every event shows once.
import { expect, test, TOKEN } from './fixtures';
import { RoomPage } from './pages/room-page';

test('the room survives a server restart mid-run and shows every event once', async ({ page, freshSession, expectedConsole, ownServer }) => {
  test.setTimeout(150_000);
  // Requests in flight when the server dies fail in the console; that is the point of the test.
  expectedConsole.push(/net::ERR_(INCOMPLETE_CHUNKED_ENCODING|CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE)/);
  expectedConsole.push(/Failed to load resource/);
  // Our own server (the shared web server cannot be restarted from a test): same port and data dir across the restart.
  // Stopped by the fixture after the page has left it (its output is printed when the test fails).
  const server = await ownServer();
  const room = new RoomPage(page);
  await page.goto(`${server.origin}/login?token=${TOKEN}`);
  await page.goto(`${server.origin}/?session=${encodeURIComponent(freshSession)}`);
  await expect(room.sessionTitle).toHaveText(freshSession);
  await room.waitLive();
  await room.page.getByRole('button', { name: 'Expand toolbox' }).click();

  // A run that pauses on an approval (exec asks by default): it is mid-run when the server dies.
  await room.send('/tool exec {"command":"echo survived"}');
  await expect(room.approval).toBeVisible();
  await expect(room.approval).toContainText('echo survived');
  await expect(room.toolbox.getByTestId('tool-call')).toHaveCount(1);
  const approvalId = await room.page.getByTestId('approval-attachment').getAttribute('data-approval-id');
  expect(approvalId).toBeTruthy();

  await server.kill();
  await expect(page.getByTestId('connection-banner')).toBeVisible();
  await expect(page.getByTestId('status-bar')).not.toHaveAttribute('data-connection', 'connected');

  await server.start();
  // The subscription comes back by itself (with the last event id) and the banner goes.
  await expect(page.getByTestId('connection-banner')).toHaveCount(0, { timeout: 45_000 });
  await room.waitLive();

  // The pending approval survived the restart: the same one, still at the bottom of the toolbox.
  await expect(room.page.getByTestId('approval-attachment')).toHaveAttribute('data-approval-id', approvalId!);
  await room.button('Allow once').click();
  await expect(room.approval).toHaveCount(0);

  const reply = room.messages('assistant').filter({ hasText: 'exec: {' });
  await expect(reply).toHaveCount(1);
  await expect(reply).toContainText('survived');
  await expect(room.transcript.getByTestId('pending-bubble')).toHaveCount(0);
  await expect(room.page.getByTestId('run-active')).toHaveCount(0);

  // Exactly once: one user row, one tool call card, one result, one reply, one call in the toolbox.
  const expectOnce = async () => {
    await expect(room.messages('user')).toHaveCount(1);
    await expect(room.toolCards('tool_call')).toHaveCount(1);
    await expect(room.toolCards('tool_result')).toHaveCount(1);
    await expect(room.toolCards('tool_result')).toContainText('survived');
    await expect(room.messages('assistant')).toHaveCount(1);
    await expect(room.toolbox.getByTestId('tool-call')).toHaveCount(1);
    await expect(room.toolbox.getByTestId('tool-call')).toHaveAttribute('data-status', 'done');
  };
  await expectOnce();

  // The event inspector holds each event id once, with no gap.
  await room.page.getByRole('button', { name: 'Event inspector', exact: true }).click();
  await expect(room.inspector).toBeVisible();
  // The run's end arrived (after the restart, from the new process) and was listed once.
  await expect(room.inspector.locator('[data-testid="event-row"][data-stream="lifecycle"][data-phase="end"]')).toHaveCount(1);
  const ids = await room.inspector.getByTestId('event-row').evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-event-id'))));
  expect(ids.length).toBeGreaterThan(3);
  expect(new Set(ids).size, `event ids ${ids.join(',')}`).toBe(ids.length);
  // This server has only this session's run: its events, before and after the restart, form one unbroken id range.
  const sorted = [...ids].sort((a, b) => a - b);
  expect(sorted, 'no gap across the restart').toEqual(sorted.map((_, i) => sorted[0]! + i));
  await room.snap('restart-survived');

  // What the server stored agrees with what the room built live.
  await page.reload();
  await room.waitLive();
  await room.page.getByRole('button', { name: 'Expand toolbox' }).click();
  await expectOnce();
});
