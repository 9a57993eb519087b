// MCP in the room, on a server of this test's own with an MCP config: the approval card names server, tool and (unverified) hints; the status panel shows each server.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test, TOKEN } from './fixtures';
import { RoomPage } from './pages/room-page';

const STDIO_SERVER = path.resolve(import.meta.dirname, '..', 'server', 'mcp', 'testing', 'stdio-server.mjs');

test('an MCP tool call asks in the room with its server, tool and hints; the status panel shows the servers', async ({ page, freshSession, ownServer }) => {
  test.setTimeout(120_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crosstalk-e2e-mcp-'));
  const configFile = path.join(dir, 'crosstalk.config.json');
  fs.writeFileSync(
    configFile,
    JSON.stringify({ mcp: { servers: { files: { command: process.execPath, args: [STDIO_SERVER] }, broken: { command: path.join(dir, 'no-such-binary') } } } }),
  );
  try {
    const server = await ownServer({ env: { CROSSTALK_CONFIG: configFile } });
    const room = new RoomPage(page);
    await page.goto(`${server.origin}/login?token=${TOKEN}`);
    await page.goto(`${server.origin}/?session=${encodeURIComponent(freshSession)}`);
    await expect(room.sessionTitle).toHaveText(freshSession);
    await room.waitLive();

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
  } finally {
    // The server itself is stopped by the fixture, after the page has left it.
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
