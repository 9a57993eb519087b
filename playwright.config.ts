// Playwright: real Chromium against the built app served by `node scripts/start.mjs` on loopback.
import { defineConfig } from '@playwright/test';
import os from 'node:os';
import path from 'node:path';

const PORT = Number(process.env.E2E_PORT ?? 3217);
const BASE_URL = `http://127.0.0.1:${PORT}`;
export const E2E_TOKEN = 'e2e-token';
// A fresh data dir per run, wiped by the server command (not here: the config is re-evaluated in every worker).
const DATA_DIR = path.join(os.tmpdir(), `crosstalk-e2e-${PORT}`);

export default defineConfig({
  testDir: 'e2e',
  fullyParallel: false,
  workers: 1,
  forbidOnly: !!process.env.CI,
  retries: 0,
  timeout: 60_000,
  expect: { timeout: 15_000 },
  reporter: process.env.CI ? [['list'], ['html', { open: 'never' }]] : 'list',
  use: {
    baseURL: BASE_URL,
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
    browserName: 'chromium',
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
  webServer: {
    // The seed (a 10,000-row transcript and one row of every kind) is written straight into the fresh store first.
    command: `rm -rf '${DATA_DIR}' && node_modules/.bin/tsx e2e/support/seed-db.ts '${DATA_DIR}' && exec node scripts/start.mjs`,
    url: `${BASE_URL}/`,
    reuseExistingServer: false,
    timeout: 300_000,
    stdout: 'pipe',
    stderr: 'pipe',
    env: {
      PORT: String(PORT),
      HOST: '127.0.0.1',
      CROSSTALK_TOKEN: E2E_TOKEN,
      CROSSTALK_DATA_DIR: DATA_DIR,
      CROSSTALK_WORKSPACES: `${DATA_DIR}-ws`,
      NEXT_TELEMETRY_DISABLED: '1',
    },
  },
});
