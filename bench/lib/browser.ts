// Real Chromium for the room benches: the system's (or CHROMIUM_PATH), headless, and a context logged in to a server.
import { type Browser, type BrowserContext, chromium } from '@playwright/test';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
}

/** A 1280×800 context that has been through `/login?token=` (so its pages carry the session cookie). */
export async function loggedInContext(browser: Browser, baseUrl: string, token: string, o: { timeoutMs?: number; bypassCSP?: boolean } = {}): Promise<BrowserContext> {
  // bypassCSP: the room's CSP (no 'unsafe-eval') refuses Playwright's string predicates (waitForFunction).
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...(o.bypassCSP ? { bypassCSP: true } : {}) });
  if (o.timeoutMs !== undefined) {
    context.setDefaultTimeout(o.timeoutMs);
    context.setDefaultNavigationTimeout(o.timeoutMs);
  }
  const login = await context.newPage();
  await login.goto(`${baseUrl}/login?token=${token}`);
  await login.close();
  return context;
}
