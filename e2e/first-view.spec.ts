// What a new user sees first at 1280 px (issue 22.8): the status panel's pending count as live as the Approvals button's
// (and the store's), no label of the status panel cut off, an empty Tools panel folded to a strip beside a wide transcript.
import { expect, test, TOKEN } from './fixtures';
import { rpc } from './support/rpc';

type Pending = { approvals: Array<{ approvalId: string; sessionKey: string }> };

test('at 1280 px: the pending count agrees with the Approvals button and the store, no label is cut off, an empty Tools panel is a strip', async ({
  room,
  page,
  request,
  freshSession,
}) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await room.open(freshSession);

  // An empty Tools panel is a strip: the transcript keeps the width.
  await expect(room.toolbox).toHaveAttribute('data-folded', 'true');
  const strip = (await room.toolbox.boundingBox())!;
  expect(strip.width).toBeLessThanOrEqual(48);
  expect((await room.transcript.boundingBox())!.width).toBeGreaterThanOrEqual(900);

  // No label or figure of the status panel is cut off.
  const panel = room.statusPanel;
  await expect(panel.getByTestId('status-runs')).toBeVisible();
  const cut = await panel.locator('dt, dd, h2').evaluateAll((els) => els.filter((e) => e.scrollWidth > e.clientWidth).map((e) => e.textContent));
  expect(cut, 'labels wider than their box').toEqual([]);
  const labels = await panel.locator('dt').allTextContents();
  expect(labels).toContain('Reusable delegates');
  expect(labels).toContain('Runs ok / error / interrupted');

  // From here on, every frame: the panel's pending figure and the button's count are the same number.
  await page.evaluate(() => {
    const w = window as unknown as { __mismatch: string[] };
    w.__mismatch = [];
    const check = () => {
      const a = document.querySelector('[data-testid="status-pending-approvals"]')?.textContent;
      const b = document.querySelector('[data-testid="approvals-count"]')?.textContent;
      if (a != null && b != null && a !== b) w.__mismatch.push(`panel ${a} / button ${b}`);
      requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
  });
  const storeCount = async () => (await rpc<Pending>(request, TOKEN, 'approvals.list', {})).approvals.length;
  const shown = async () => ({ panel: await room.statusFigure('pending-approvals'), button: Number(await page.getByTestId('approvals-count').innerText()) });

  // A call that asks in this session: the Tools panel unfolds with it, and both counts follow the store.
  await room.send('/tool exec {"command":"echo counted"}');
  await expect(room.approval).toBeVisible();
  await expect(room.toolbox).not.toHaveAttribute('data-folded', 'true');
  await expect.poll(async () => JSON.stringify(await shown())).toBe(JSON.stringify({ panel: await storeCount(), button: await storeCount() }));

  // One in another session (its events do not reach this tab): still the same figure in both places.
  const other = `${freshSession}-other`;
  await rpc(request, TOKEN, 'agent', { sessionKey: other, message: '/tool exec {"command":"echo elsewhere"}' });
  await expect.poll(async () => (await rpc<Pending>(request, TOKEN, 'approvals.list', { sessionKey: other })).approvals.length).toBe(1);
  await expect.poll(async () => JSON.stringify(await shown())).toBe(JSON.stringify({ panel: await storeCount(), button: await storeCount() }));

  await room.button('Allow once').click();
  await expect(room.approval).toHaveCount(0);
  for (const a of (await rpc<Pending>(request, TOKEN, 'approvals.list', { sessionKey: other })).approvals) {
    await rpc(request, TOKEN, 'approvals.resolve', { approvalId: a.approvalId, decision: 'deny', reason: 'test over' });
  }
  await expect.poll(async () => JSON.stringify(await shown())).toBe(JSON.stringify({ panel: await storeCount(), button: await storeCount() }));
  expect(await page.evaluate(() => (window as unknown as { __mismatch: string[] }).__mismatch)).toEqual([]);
  await room.snap('first-view-1280');
});
