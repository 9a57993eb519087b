// Budgets in the room (CONTRACT §5, §7): a request tree past its cap waits on a `budget` item, shown with "Allow once"
// and "Deny" only; allowing it once lets the run go on to its answer.
import { expect, openOwnRoom, test } from './fixtures';

test('a budget pause is shown with Allow once and Deny, and allowed once from the room', async ({ page, freshSession, ownServer }) => {
  test.setTimeout(120_000);
  // A cap the first step of a tree passes: the step after the tool call needs a decision; one more cap covers it.
  const server = await ownServer({ config: { agents: [{ id: 'main', budget: { tokens: 100 } }, { id: 'researcher' }] } });
  const room = await openOwnRoom(page, server, freshSession);

  await room.send('/tool sessions_list {}');
  // Said as a sentence, not only as the item's JSON (probe F, stop 59): in the session's approval row and the dialog.
  await expect(page.getByRole('region', { name: 'Approval' }).getByTestId('budget-text')).toContainText('of its 100-token cap', { timeout: 20_000 });
  await page.getByRole('button', { name: /^Approvals/ }).click();
  const dialog = page.getByRole('dialog', { name: 'Approvals' });
  await expect(dialog).toContainText('budget', { timeout: 20_000 });
  await expect(dialog.getByRole('button', { name: 'Allow once' })).toBeVisible();
  await expect(dialog.getByRole('button', { name: 'Deny' })).toBeVisible();
  await expect(dialog.getByRole('button', { name: 'Allow always' })).toHaveCount(0);
  await expect(dialog.getByTestId('budget-text')).toHaveText(/^This request tree has spent [\d,]+ tokens of its 100-token cap\. Allow once lets it spend one more cap; Deny stops it\.$/);
  await room.snap('budget-pause');
  await dialog.getByRole('button', { name: 'Allow once' }).click();
  await expect(dialog.getByRole('button', { name: 'Allow once' })).toHaveCount(0, { timeout: 20_000 });
  await page.keyboard.press('Escape');
  await expect(room.messages('assistant').filter({ hasText: 'sessions_list: {' })).toHaveCount(1, { timeout: 20_000 });
});
