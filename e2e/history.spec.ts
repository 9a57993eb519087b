// The decision log in the room (CONTRACT §3 approvals.history, §7): an approval decided in the Approvals dialog shows in
// its "History" tab with who decided and where, and the record downloads as JSON and CSV; a reviewer's decision shows
// on the tool card ("allowed by reviewer: …") and in the History tab.
import fs from 'node:fs';
import { expect, openOwnRoom, test } from './fixtures';

test('an approval decided in the dialog is in the History tab, and the record exports as JSON and CSV', async ({ room, page, freshSession }) => {
  await room.open(freshSession);
  await room.send('/tool exec {"command":"echo history-e2e"}');
  await page.getByRole('button', { name: /^Approvals/ }).click();
  const dialog = page.getByRole('dialog', { name: 'Approvals' });
  const item = dialog.getByTestId('inbox-approval').filter({ hasText: 'history-e2e' });
  await expect(item).toBeVisible();
  const approvalId = (await item.getAttribute('data-approval-id'))!;
  await item.getByRole('textbox', { name: 'Reason' }).fill('fine, "quoted" by me');
  await item.getByRole('button', { name: 'Allow once' }).click();
  await expect(item).toHaveCount(0);

  // The tabs are one Tab stop and move with the arrow keys (the ARIA tabs pattern); before, ArrowRight did nothing.
  const [pendingTab, historyTab] = [dialog.getByRole('tab', { name: 'Pending' }), dialog.getByRole('tab', { name: 'History' })];
  await expect(historyTab).toHaveAttribute('tabindex', '-1');
  await pendingTab.focus();
  await page.keyboard.press('ArrowRight');
  await expect(historyTab).toBeFocused();
  await expect(historyTab).toHaveAttribute('aria-selected', 'true');
  await expect(dialog.getByRole('tabpanel')).toHaveAttribute('id', 'approvals-panel-history');
  await page.keyboard.press('ArrowLeft');
  await expect(pendingTab).toHaveAttribute('aria-selected', 'true');
  await dialog.getByRole('tab', { name: 'History' }).click();
  await expect(dialog.getByRole('tab', { name: 'History' })).toHaveAttribute('aria-selected', 'true');
  const rec = dialog.locator(`[data-testid="history-item"][data-approval-id="${approvalId}"]`);
  await expect(rec).toBeVisible();
  await expect(rec).toHaveAttribute('data-decision', 'allow_once');
  await expect(rec.getByTestId('history-decider')).toHaveText('by a person in the Approvals dialog');
  await expect(rec.getByTestId('history-reason')).toHaveText('fine, "quoted" by me');
  await expect(rec).toContainText(freshSession);
  await room.snap('approvals-history');

  const [json] = await Promise.all([page.waitForEvent('download'), dialog.getByRole('button', { name: 'Export history as JSON' }).click()]);
  expect(json.suggestedFilename()).toMatch(/^crosstalk-approvals-.*\.json$/);
  const body = JSON.parse(fs.readFileSync((await json.path())!, 'utf8')) as { approvals: Array<Record<string, unknown>> };
  expect(body.approvals.find((r) => r.approvalId === approvalId)).toMatchObject({
    sessionKey: freshSession, kind: 'tool', tool: 'exec', decision: 'allow_once', decidedBy: { type: 'user', id: 'inbox' }, reason: 'fine, "quoted" by me',
  });

  const [csv] = await Promise.all([page.waitForEvent('download'), dialog.getByRole('button', { name: 'Export history as CSV' }).click()]);
  expect(csv.suggestedFilename()).toMatch(/^crosstalk-approvals-.*\.csv$/);
  const text = fs.readFileSync((await csv.path())!, 'utf8');
  const lines = text.split('\r\n');
  expect(lines[0]).toBe('approvalId,sessionKey,runId,kind,tool,decision,decidedBy,decidedById,reason,requestedAt,decidedAt');
  const line = lines.find((l) => l.startsWith(`${approvalId},`));
  expect(line).toMatch(new RegExp(`^${approvalId},${freshSession},run_[^,]+,tool,exec,allow_once,user,inbox,"fine, ""quoted"" by me",\\d{4}-[^,]+Z,\\d{4}-[^,]+Z$`));

  // The tool card says who decided it, and why.
  await page.keyboard.press('Escape');
  const card = room.toolCards('tool_result').filter({ hasText: 'history-e2e' });
  await expect(card.getByTestId('tool-card-decider')).toHaveText('by you');
  await card.locator('summary').click();
  await expect(card.getByTestId('tool-card-decision')).toHaveText('allowed by you (inbox): fine, "quoted" by me');
});

test("a reviewer's decision shows on the tool card and in the History tab", async ({ page, freshSession, ownServer }) => {
  test.setTimeout(120_000);
  const server = await ownServer({ config: { agents: [{ id: 'main', tools: { exec: 'ask' }, reviewer: { model: 'scripted' } }] } });
  const room = await openOwnRoom(page, server, freshSession);
  await room.send('/tool exec {"command":"echo review:allow"}');
  const card = room.toolCards('tool_result').filter({ hasText: 'review:allow' });
  await expect(card.getByTestId('tool-card-decider')).toHaveText('by reviewer', { timeout: 20_000 });
  await card.locator('summary').click();
  await expect(card.getByTestId('tool-card-decision')).toHaveText(/^allowed by reviewer: scripted review: exec arguments say review:allow$/);
  await expect(room.approval).toHaveCount(0);

  await page.getByRole('button', { name: /^Approvals/ }).click();
  const dialog = page.getByRole('dialog', { name: 'Approvals' });
  await dialog.getByRole('tab', { name: 'History' }).click();
  const rec = dialog.getByTestId('history-item').first();
  await expect(rec).toHaveAttribute('data-decided-by', 'reviewer');
  await expect(rec.getByTestId('history-decider')).toHaveText('by the reviewer (scripted)');
});
