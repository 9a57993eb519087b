// Test fixtures: each worker's own seeded room server, a logged-in room page object, a unique session key per test, and a guard against page errors.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test as base, expect, type Page } from '@playwright/test';
import { RoomPage } from './pages/room-page';
import { startServerProcess, type ServerProcess } from './support/server-process';

export const TOKEN = 'e2e-token';

interface Fixtures {
  room: RoomPage;
  /** A session of the default agent no other test touches. */
  freshSession: string;
  /** Uncaught page errors and console errors collected during the test; fails the test when any remain. */
  pageErrors: string[];
  /** Console errors a test provokes on purpose (push patterns before provoking them). */
  expectedConsole: RegExp[];
  /**
   * Starts a server of the test's own (`startServerProcess`). At teardown the page leaves first, then each server is
   * killed and its data dir removed: a server that goes away under an open page cuts its event stream, and Chromium logs
   * the cut (`net::ERR_INCOMPLETE_CHUNKED_ENCODING`) as a console error whenever it notices it — a race with the check.
   */
  ownServer: (opts?: OwnServerOptions) => Promise<ServerProcess>;
}

interface WorkerFixtures {
  /**
   * The room server of this Playwright worker: `node scripts/start.mjs` on a port and a data dir of its own, seeded by
   * e2e/support/seed-db.ts (a 10,000-row transcript, one row of every kind, archive sessions). Every test's `baseURL`
   * points at it, so workers run side by side without seeing each other's sessions, approvals or counts.
   */
  roomServer: ServerProcess;
}

export type OwnServerOptions = Parameters<typeof startServerProcess>[1] & {
  /** A `crosstalk.config.json` for this server: written to a temp dir (removed at teardown), passed as CROSSTALK_CONFIG. */
  config?: unknown;
};

// A session that has no row yet answers chat.history with 404 (unknown_session): the room shows it as empty.
const EXPECTED_CONSOLE = [/Failed to load resource: the server responded with a status of 404/];

export const test = base.extend<Fixtures, WorkerFixtures>({
  roomServer: [
    async ({}, use) => {
      const server = await startServerProcess(TOKEN, { seed: true, startTimeoutMs: 120_000 });
      await use(server);
      await server.dispose();
    },
    { scope: 'worker', timeout: 180_000 },
  ],
  baseURL: async ({ roomServer }, use, testInfo) => {
    await use(roomServer.origin);
    if (testInfo.status !== testInfo.expectedStatus) console.log(`room server output (${roomServer.origin}):\n${roomServer.output()}`);
  },
  expectedConsole: async ({}, use) => {
    await use([...EXPECTED_CONSOLE]);
  },
  pageErrors: [
    async ({ page, expectedConsole }, use) => {
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
      page.on('console', (m) => {
        if (m.type() === 'error' && !expectedConsole.some((re) => re.test(m.text()))) errors.push(`console: ${m.text()}`);
      });
      await use(errors);
      expect(errors, 'page errors').toEqual([]);
    },
    { auto: true },
  ],
  ownServer: async ({ page }, use, testInfo) => {
    const servers: ServerProcess[] = [];
    const dirs: string[] = [];
    await use(async ({ config, ...opts } = {}) => {
      if (config !== undefined) {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crosstalk-e2e-config-'));
        dirs.push(dir);
        const configFile = path.join(dir, 'crosstalk.config.json');
        fs.writeFileSync(configFile, JSON.stringify(config));
        opts = { ...opts, env: { CROSSTALK_CONFIG: configFile, ...opts.env } };
      }
      const server = await startServerProcess(TOKEN, opts);
      servers.push(server);
      return server;
    });
    await page.goto('about:blank').catch(() => undefined);
    for (const server of servers) {
      if (testInfo.status !== testInfo.expectedStatus) console.log(`server output (${server.origin}):\n${server.output()}`);
      await server.dispose();
    }
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  },
  room: async ({ page }, use) => {
    const room = new RoomPage(page);
    await room.login(TOKEN);
    await use(room);
  },
  freshSession: async ({}, use, testInfo) => {
    const unique = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    const slug = testInfo.title.toLowerCase().replace(/[^a-z0-9]+/g, '-').slice(0, 40);
    await use(`agent:main:e2e-${unique}-${slug}`);
  },
});

/** Logs `page` in to a server of the test's own and opens `sessionKey` there, live; returns the room. */
export async function openOwnRoom(page: Page, server: ServerProcess, sessionKey: string): Promise<RoomPage> {
  const room = new RoomPage(page);
  // The login cookie through the page's own request context (it shares the browser context's cookies), not a page load:
  // /login redirects to the room of the default session, and that room, once live, runs its requests (the idle board
  // prefetch among them) while the next page is on its way — a test watching the page's requests counted them.
  const login = await page.request.get(`${server.origin}/login?token=${TOKEN}`, { maxRedirects: 0 });
  expect(login.status()).toBe(303);
  await page.goto(`${server.origin}/?session=${encodeURIComponent(sessionKey)}`);
  await expect(room.sessionTitle).toHaveText(sessionKey);
  await room.waitLive();
  return room;
}

export { expect } from '@playwright/test';
