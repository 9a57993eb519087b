// Web Push in Chromium (CONTRACT §7 "Notifications"): the service worker registers, a push delivered through the
// DevTools protocol (ServiceWorker.deliverPushMessage) shows the notification with "Allow once" and "Deny", and its
// action resolves the approval. The pushed plaintext is the real one: the server pushes to a test push service on
// 127.0.0.1 that decrypts it (server/testing/push-receiver.ts), and that plaintext, action token included, is what the
// browser gets. A headless browser cannot click an OS notification: the test asks the worker (postMessage) to run its
// notificationclick path, answer(notification, action), on the notification it shows.
import { expect, test, TOKEN } from './fixtures';
import { startPushReceiver } from '../server/testing/push-receiver';
import { rpcAt } from './support/rpc';
import type { BrowserContext, Page } from '@playwright/test';

test('a pushed pending item shows a notification whose "Allow once" resolves it', async ({ page, context, request, ownServer, expectedConsole }) => {
  test.setTimeout(180_000);
  // Playwright's browser contexts are off-the-record: Chromium refuses pushManager there and logs why (its own message).
  expectedConsole.push(/does not support the Push API in incognito mode/);
  // The test push service listens on loopback: allowed only with webhooks.allowPrivateNetwork.
  const server = await ownServer({ config: { webhooks: { allowPrivateNetwork: true }, agents: [{ id: 'main', tools: { sessions_list: 'ask' } }] } });
  const rpc = <T = any>(method: string, params: object = {}) => rpcAt<T>(request, server.origin, TOKEN, method, params);

  // Installable: the manifest and its PNG icons.
  const manifest = await (await fetch(`${server.origin}/manifest.webmanifest`)).json();
  expect(manifest).toMatchObject({ name: 'crosstalk', start_url: '/', display: 'standalone' });
  for (const icon of manifest.icons) {
    const res = await fetch(`${server.origin}${icon.src}`);
    expect(res.headers.get('content-type')).toBe('image/png');
  }

  const { cdp, registrations } = await watchServiceWorkers(page, context, server.origin);

  await page.goto(`${server.origin}/login?token=${TOKEN}`);
  await expect(page.getByRole('button', { name: 'Notifications' })).toBeVisible();
  // Its bell is drawn (an emoji was an empty box on a machine without a colour emoji font), struck through while off.
  await expect(page.getByTestId('notifications-icon')).toBeVisible();
  expect((await page.getByTestId('notifications').textContent())?.trim()).toBe('');
  // The room registers its worker on load (no inline script: /sw.js under the page's CSP, worker-src 'self').
  const scriptURL = await page.evaluate(async () => (await navigator.serviceWorker.ready).active?.scriptURL);
  expect(scriptURL).toBe(`${server.origin}/sw.js`);
  await expect.poll(() => registrations.get(`${server.origin}/`)).toBeTruthy();

  // The button asks for permission and subscribes with the server's VAPID key. Headless Chromium has no push service
  // to subscribe with (no FCM): it ends `on` where one answers, else `error` with the browser's reason; never a throw.
  await page.getByRole('button', { name: 'Notifications' }).click();
  await expect(page.getByTestId('notifications')).toHaveAttribute('data-state', /^(on|error)$/);

  // A subscription the server pushes to: the test push service, which decrypts what it gets.
  const { publicKey } = await rpc<{ publicKey: string }>('push.vapidKey');
  const rcv = await startPushReceiver(() => publicKey);
  try {
    await rpc('push.subscribe', { subscription: rcv.browser('chromium').subscription });
    const sessionKey = 'agent:main:push-e2e';
    const { runId } = await rpc<{ runId: string }>('agent', { sessionKey, message: '/tool sessions_list {}' });
    await expect.poll(() => rcv.received.length, { timeout: 30_000 }).toBe(1);
    const pushed = rcv.received[0]!.json as { approvalId: string; token: string; summary: string };
    expect(pushed).toMatchObject({ type: 'approval', kind: 'tool', sessionKey, tool: 'sessions_list', parentChain: [sessionKey], summary: 'sessions_list {}' });

    // Notifications are read only once the worker's showNotification() has resolved. Chromium's getNotifications()
    // deletes from its database every stored notification the platform does not report as displayed yet, unless it
    // was created after the read began: a read that starts while one is being shown drops it for good (it stays on
    // screen, and every later read lists nothing). Polled while the push was being shown, this test once waited 15 s
    // on [] under load (stop 22: the worker had fetched the notification's icon). So the worker's own
    // registration.showNotification, which sw.js looks up at each call, is wrapped to record what it has shown.
    await expect.poll(() => context.serviceWorkers().some((w) => w.url() === `${server.origin}/sw.js`)).toBe(true);
    const worker = context.serviceWorkers().find((w) => w.url() === `${server.origin}/sw.js`)!;
    await worker.evaluate(() => {
      const g = globalThis as unknown as { registration: ServiceWorkerRegistration; shownTags: string[] };
      const show = g.registration.showNotification.bind(g.registration);
      g.shownTags = [];
      g.registration.showNotification = async (title, options) => {
        await show(title, options);
        g.shownTags.push(options?.tag ?? '');
      };
    });
    const hasShown = (tag: string) => worker.evaluate((t) => (globalThis as unknown as { shownTags: string[] }).shownTags.includes(t), tag);

    // The browser gets that plaintext through the DevTools protocol, as its push service would hand it over.
    await cdp.send('ServiceWorker.deliverPushMessage', { origin: server.origin, registrationId: registrations.get(`${server.origin}/`)!, data: JSON.stringify(pushed) });
    const shown = async () =>
      page.evaluate(async (tag) => {
        const reg = await navigator.serviceWorker.ready;
        return (await reg.getNotifications({ tag })).map((n) => ({ title: n.title, body: n.body, actions: ((n as unknown as { actions?: Array<{ title: string }> }).actions ?? []).map((a) => a.title) }));
      }, pushed.approvalId);
    await expect.poll(() => hasShown(pushed.approvalId), { timeout: 15_000 }).toBe(true);
    const notes = await shown();
    expect(notes).toHaveLength(1);
    const [note] = notes;
    // Its agent, parent chain, tool and one-line summary; the two actions.
    expect(note).toEqual({ title: 'main asks: sessions_list', body: `sessions_list {}\n${sessionKey}`, actions: ['Allow once', 'Deny'] });

    // "Allow once": the worker's notificationclick path (answer) on that notification, asked through postMessage.
    const result = await page.evaluate(async (approvalId) => {
      const reg = await navigator.serviceWorker.ready;
      const answered = new Promise<{ status: number; body: unknown }>((resolve) => {
        navigator.serviceWorker.addEventListener('message', (e) => {
          if (e.data?.type === 'crosstalk:notification-action-result' && e.data.approvalId === approvalId) resolve(e.data);
        });
      });
      reg.active!.postMessage({ type: 'crosstalk:notification-action', approvalId, action: 'allow_once' });
      return answered;
    }, pushed.approvalId);
    expect(result).toMatchObject({ status: 200, body: { status: 'ok' } });
    const wait = await rpc<{ status: string; response: string }>('agent.wait', { runId, timeoutMs: 30_000 });
    expect(wait.status).toBe('ok');
    expect(wait.response).toMatch(/^sessions_list: /);
    expect((await rpc<{ approvals: unknown[] }>('approvals.list', { sessionKey })).approvals).toEqual([]);
    // The notification is gone; the token is spent (the route refuses it now).
    await expect.poll(shown).toHaveLength(0);
    const again = await fetch(`${server.origin}/api/push/action`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ approvalId: pushed.approvalId, token: pushed.token, decision: 'deny' }) });
    expect(again.status).toBeGreaterThanOrEqual(400);
  } finally {
    await rcv.close();
  }
});

test('a resolved push turns the notification into a plain, silent "Decided" one with no actions, and updates the badge', async ({ page, context, request, ownServer, expectedConsole }) => {
  test.setTimeout(180_000);
  expectedConsole.push(/does not support the Push API in incognito mode/);
  const server = await ownServer({ config: { webhooks: { allowPrivateNetwork: true }, agents: [{ id: 'main', tools: { sessions_list: 'ask' } }] } });
  const rpc = <T = any>(method: string, params: object = {}) => rpcAt<T>(request, server.origin, TOKEN, method, params);
  const { cdp, registrations } = await watchServiceWorkers(page, context, server.origin);
  await page.goto(`${server.origin}/login?token=${TOKEN}`);
  await page.evaluate(async () => (await navigator.serviceWorker.ready).active?.scriptURL);
  await expect.poll(() => registrations.get(`${server.origin}/`)).toBeTruthy();
  await expect.poll(() => context.serviceWorkers().some((w) => w.url() === `${server.origin}/sw.js`)).toBe(true);
  const worker = context.serviceWorkers().find((w) => w.url() === `${server.origin}/sw.js`)!;
  // What the worker shows and sets as the app badge, recorded as it happens (notifications are read only once shown:
  // see the test above); the badge calls also say when a push was handled without showing anything.
  await worker.evaluate(() => {
    const g = globalThis as unknown as { registration: ServiceWorkerRegistration; navigator: Record<string, unknown>; seen: Array<[string, string | number]> };
    const show = g.registration.showNotification.bind(g.registration);
    g.seen = [];
    g.registration.showNotification = async (title, options) => {
      await show(title, options);
      g.seen.push([options?.tag ?? '', title]);
    };
    Object.defineProperty(g.navigator, 'setAppBadge', { configurable: true, value: async (n?: number) => void g.seen.push(['badge', n ?? 0]) });
    Object.defineProperty(g.navigator, 'clearAppBadge', { configurable: true, value: async () => void g.seen.push(['badge', 0]) });
  });
  const seen = () => worker.evaluate(() => (globalThis as unknown as { seen: Array<[string, string | number]> }).seen);
  const shown = (tag: string) =>
    page.evaluate(async (t) => {
      const reg = await navigator.serviceWorker.ready;
      return (await reg.getNotifications({ tag: t })).map((n) => ({ title: n.title, body: n.body, silent: n.silent, actions: ((n as unknown as { actions?: Array<{ title: string }> }).actions ?? []).map((a) => a.title) }));
    }, tag);
  const deliver = (json: unknown) => cdp.send('ServiceWorker.deliverPushMessage', { origin: server.origin, registrationId: registrations.get(`${server.origin}/`)!, data: JSON.stringify(json) });

  const { publicKey } = await rpc<{ publicKey: string }>('push.vapidKey');
  const rcv = await startPushReceiver(() => publicKey);
  try {
    await rpc('push.subscribe', { subscription: rcv.browser('chromium').subscription });
    const pushesOf = (approvalId: string) => rcv.received.map((r) => r.json as { type: string; approvalId: string }).filter((j) => j.approvalId === approvalId);

    // An item is pushed and shown with its actions; the badge counts it.
    const first = 'agent:main:push-e2e-decided';
    await rpc('agent', { sessionKey: first, message: '/tool sessions_list {}' });
    await expect.poll(() => rcv.received.length, { timeout: 30_000 }).toBe(1);
    const item = rcv.received[0]!.json as { approvalId: string; summary: string };
    await deliver(item);
    await expect.poll(seen, { timeout: 15_000 }).toEqual([[item.approvalId, 'main asks: sessions_list'], ['badge', 1]]);
    expect(await shown(item.approvalId)).toEqual([{ title: 'main asks: sessions_list', body: `sessions_list {}\n${first}`, silent: false, actions: ['Allow once', 'Deny'] }]);

    // Decided elsewhere (JSON-RPC here): the server pushes the resolved note, the worker replaces the notification.
    await rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'deny' });
    await expect.poll(() => pushesOf(item.approvalId).length, { timeout: 30_000 }).toBe(2);
    const note = pushesOf(item.approvalId)[1]!;
    expect(note).toEqual({ type: 'resolved', approvalId: item.approvalId, decision: 'deny', decidedBy: { type: 'user', id: 'jsonrpc' } });
    await deliver(note);
    await expect.poll(seen, { timeout: 15_000 }).toEqual([[item.approvalId, 'main asks: sessions_list'], ['badge', 1], [item.approvalId, 'Decided: denied'], ['badge', 0]]);
    // One notification under the item's tag: plain, silent, no actions (before: the actionable one stayed).
    expect(await shown(item.approvalId)).toEqual([{ title: 'Decided: denied', body: 'sessions_list {}\nDecided in crosstalk.', silent: true, actions: [] }]);

    // The push service handed the note over before the item's own push (or the item's notification was dismissed):
    // the note is shown, and the late item's push does not bring the actions back.
    const second = 'agent:main:push-e2e-late';
    const { runId } = await rpc<{ runId: string }>('agent', { sessionKey: second, message: '/tool sessions_list {}' });
    await expect.poll(() => rcv.received.length, { timeout: 30_000 }).toBe(3);
    const late = rcv.received[2]!.json as { approvalId: string };
    await rpc('approvals.resolve', { approvalId: late.approvalId, decision: 'allow_once' });
    await expect.poll(() => pushesOf(late.approvalId).length, { timeout: 30_000 }).toBe(2);
    await deliver(pushesOf(late.approvalId)[1]);
    await expect.poll(async () => (await seen()).length, { timeout: 15_000 }).toBe(6);
    expect((await seen()).slice(4)).toEqual([[late.approvalId, 'Decided: allowed'], ['badge', 0]]);
    await deliver(late);
    await expect.poll(async () => (await seen()).length, { timeout: 15_000 }).toBe(7);
    expect((await seen()).slice(6)).toEqual([['badge', 0]]);
    expect(await shown(late.approvalId)).toEqual([{ title: 'Decided: allowed', body: 'Decided in crosstalk.', silent: true, actions: [] }]);
    expect((await rpc<{ status: string }>('agent.wait', { runId, timeoutMs: 30_000 })).status).toBe('ok');
  } finally {
    await rcv.close();
  }
});

/**
 * Grants notifications to `origin` and follows its service-worker registrations over CDP (scope URL → registration
 * id), as both tests read them.
 */
async function watchServiceWorkers(page: Page, context: BrowserContext, origin: string) {
  await context.grantPermissions(['notifications'], { origin });
  const cdp = await context.newCDPSession(page);
  const registrations = new Map<string, string>();
  cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => {
    for (const r of e.registrations) if (!r.isDeleted) registrations.set(r.scopeURL, r.registrationId);
  });
  await cdp.send('ServiceWorker.enable');
  return { cdp, registrations };
}
