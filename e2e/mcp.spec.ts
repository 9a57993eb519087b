// MCP in the room, on a server of this test's own with an MCP config: the approval card names server, tool and (unverified) hints; the status panel shows each server.
import os from 'node:os';
import path from 'node:path';
import { expect, openOwnRoom, test } from './fixtures';

const STDIO_SERVER = path.resolve(import.meta.dirname, '..', 'server', 'mcp', 'testing', 'stdio-server.mjs');

test('an MCP tool call asks in the room with its server, tool and hints; the status panel shows the servers', async ({ page, freshSession, ownServer }) => {
  test.setTimeout(120_000);
  const missing = path.join(os.tmpdir(), `crosstalk-e2e-mcp-no-such-binary-${process.pid}`);
  const server = await ownServer({ config: { mcp: { servers: { files: { command: process.execPath, args: [STDIO_SERVER] }, broken: { command: missing } } } } });
  const room = await openOwnRoom(page, server, freshSession);

  await expect(page.getByTestId('status-mcp-files')).toHaveText(/^up · \d+ tools$/, { timeout: 20_000 });
  await expect(page.getByTestId('status-mcp-broken')).toHaveText('failed');

  // A destructive tool that also claims to be read-only: it still asks (the default for MCP tools), and the card says why it may be risky.
  await room.send('/tool mcp__files__remove_all {}');
  await expect(room.approval).toBeVisible();
  const card = page.getByTestId('approval-mcp');
  await expect(card).toContainText('MCP server files, tool remove_all');
  await expect(card).toContainText('read-only');
  await expect(card).toContainText('destructive');
  await expect(card).toContainText('unverified');
  await room.button('Allow once').click();
  await expect(room.approval).toHaveCount(0);
  await expect(room.messages('assistant').filter({ hasText: 'mcp__files__remove_all: {"status":"ok"' })).toHaveCount(1);
});
