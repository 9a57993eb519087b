// Budgets in the room (CONTRACT §5, §7): a request tree past its cap waits on a `budget` item, shown with "Allow once"
// and "Deny" only; allowing it once lets the run go on to its answer.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test, TOKEN } from './fixtures';
import { RoomPage } from './pages/room-page';

test('a budget pause is shown with Allow once and Deny, and allowed once from the room', async ({ page, freshSession, ownServer }) => {
  test.setTimeout(120_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crosstalk-e2e-budget-'));
  const configFile = path.join(dir, 'crosstalk.config.json');
  // A cap the first step of a tree passes: the step after the tool call needs a decision; one more cap covers it.
  fs.writeFileSync(configFile, JSON.stringify({ agents: [{ id: 'main', budget: { tokens: 100 } }, { id: 'researcher' }] }));
  try {
    const server = await ownServer({ env: { CROSSTALK_CONFIG: configFile } });
    const room = new RoomPage(page);
    await page.goto(`${server.origin}/login?token=${TOKEN}`);
    await page.goto(`${server.origin}/?session=${encodeURIComponent(freshSession)}`);
    await expect(room.sessionTitle).toHaveText(freshSession);
    await room.waitLive();

    await room.send('/tool sessions_list {}');
    await page.getByRole('button', { name: /^Approvals/ }).click();
    const dialog = page.getByRole('dialog', { name: 'Approvals' });
    await expect(dialog).toContainText('budget', { timeout: 20_000 });
    await expect(dialog.getByRole('button', { name: 'Allow once' })).toBeVisible();
    await expect(dialog.getByRole('button', { name: 'Deny' })).toBeVisible();
    await expect(dialog.getByRole('button', { name: 'Allow always' })).toHaveCount(0);
    await room.snap('budget-pause');
    await dialog.getByRole('button', { name: 'Allow once' }).click();
    await expect(dialog.getByRole('button', { name: 'Allow once' })).toHaveCount(0, { timeout: 20_000 });
    await page.keyboard.press('Escape');
    await expect(room.messages('assistant').filter({ hasText: 'sessions_list: {' })).toHaveCount(1, { timeout: 20_000 });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
