// MCP elicitation in the room (CONTRACT §7): server-everything's elicitation tool asks through a form in the Approval row
// (submitted) and in the Approvals dialog (declined); a URL elicitation shows a link named "Open" with Done / Decline.
import { createRequire } from 'node:module';
import path from 'node:path';
import { expect, openOwnRoom, test } from './fixtures';

const require = createRequire(import.meta.url);
const EVERYTHING = path.join(path.dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist', 'index.js');

test('an MCP elicitation is a form in the Approval row and in the Approvals dialog; URL mode is a link', async ({ page, freshSession, ownServer, expectedConsole }) => {
  test.setTimeout(180_000);
  // The server of this test stops at its end: the room's open event stream is cut.
  expectedConsole.push(/net::ERR_(INCOMPLETE_CHUNKED_ENCODING|CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE)/);
  const server = await ownServer({
    config: { agents: [{ id: 'main', tools: { 'mcp__everything__*': 'auto' } }], mcp: { servers: { everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] } } } },
  });
  const room = await openOwnRoom(page, server, freshSession);
  await expect(page.getByTestId('status-mcp-everything')).toHaveText(/^up · \d+ tools$/, { timeout: 30_000 });

  // Submitted from the Approval row: one labelled field per property (by title), defaults prefilled.
  await room.send('/tool mcp__everything__trigger-elicitation-request {}');
  await expect(room.approval).toBeVisible({ timeout: 30_000 });
  await expect(room.approval).toContainText('Please provide inputs for the following fields:');
  await expect(room.approval.getByLabel('String with default', { exact: true })).toHaveValue('It was a dark and stormy night.');
  await expect(room.approval.getByLabel('Integer', { exact: true })).toHaveValue('42');
  await expect(room.approval.getByLabel('Titled Single Select Enum', { exact: true })).toHaveValue('hero-1');
  // A required field is found by its label exactly too (the star is beside the label, not in its name).
  await room.approval.getByLabel('String', { exact: true }).fill('Ada Lovelace');
  await room.approval.getByLabel('Boolean', { exact: true }).check();
  await room.approval.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(room.approval).toHaveCount(0);
  await expect(room.messages('assistant').filter({ hasText: 'Name: Ada Lovelace' })).toHaveCount(1, { timeout: 30_000 });

  // Declined from the Approvals dialog.
  await room.send('/tool mcp__everything__trigger-elicitation-request {}');
  await expect(room.approval).toBeVisible({ timeout: 30_000 });
  await page.getByRole('button', { name: 'Approvals', exact: true }).click();
  const dialog = page.getByRole('dialog', { name: 'Approvals' });
  await expect(dialog.getByRole('textbox', { name: 'String', exact: true })).toBeVisible();
  await expect(dialog.getByRole('button', { name: 'Cancel', exact: true })).toBeVisible();
  await dialog.getByRole('button', { name: 'Decline', exact: true }).click();
  await expect(dialog.getByTestId('approvals-empty')).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(room.messages('assistant').filter({ hasText: 'User declined' })).toHaveCount(1, { timeout: 30_000 });

  // URL mode: a link named Open (to the server's URL), Done answers accept.
  await room.send('/tool mcp__everything__trigger-url-elicitation {"url":"https://example.com/consent","message":"Open the consent page"}');
  await expect(room.approval).toContainText('Open the consent page', { timeout: 30_000 });
  await expect(room.approval.getByRole('link', { name: 'Open', exact: true })).toHaveAttribute('href', 'https://example.com/consent');
  await expect(room.approval.getByRole('button', { name: 'Decline', exact: true })).toBeVisible();
  await room.approval.getByRole('button', { name: 'Done', exact: true }).click();
  await expect(room.approval).toHaveCount(0);
});
