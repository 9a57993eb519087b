// crosstalk's service worker: shows a notification for each pushed pending item (CONTRACT §7 "Notifications"); its
// "Allow once" and "Deny" answer a tool item through POST /api/push/action with the item's one-time token. Once the
// item is decided anywhere, a `resolved` push replaces that notification by a plain, silent "Decided: …" one.
/* eslint-env serviceworker */

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

const ACTIONS = ['allow_once', 'deny'];

function agentOf(sessionKey) {
  const m = /^agent:([^:]+):/.exec(sessionKey || '');
  return m ? m[1] : 'an agent';
}

/** The app badge counts the notifications still waiting for an answer (the room sets the exact pending count). */
async function updateBadge() {
  if (!self.navigator.setAppBadge) return;
  const open = await self.registration.getNotifications();
  const n = open.filter((x) => x.data && x.data.type === 'approval').length;
  await (n ? self.navigator.setAppBadge(n) : self.navigator.clearAppBadge()).catch(() => undefined);
}

async function showItem(item) {
  // Decided already (the push service handed the resolved note over first): the item is not shown as waiting again.
  const [open] = await self.registration.getNotifications({ tag: item.approvalId });
  if (open && open.data && open.data.type === 'resolved') return updateBadge();
  const chain = Array.isArray(item.parentChain) ? item.parentChain.join(' › ') : item.sessionKey;
  const what = item.kind === 'tool' ? item.tool : item.kind;
  const actionable = item.kind === 'tool' && typeof item.token === 'string';
  await self.registration.showNotification(`${agentOf(item.sessionKey)} asks: ${what}`, {
    body: `${item.summary}\n${chain}`,
    tag: item.approvalId,
    data: item,
    icon: '/icon-192.png',
    requireInteraction: true,
    actions: actionable ? [{ action: 'allow_once', title: 'Allow once' }, { action: 'deny', title: 'Deny' }] : [],
  });
  await updateBadge();
}

const OUTCOME = { allow_once: 'allowed', allow_always: 'allowed', accept: 'allowed', deny: 'denied', decline: 'denied' };
const DECIDER = { user: 'in crosstalk', chat: 'in chat', push: 'from a notification', reviewer: 'by the reviewer', rule: 'by a rule' };

/**
 * The item is no longer pending (decided anywhere, or its run ended): its notification, under the same tag, becomes a
 * silent one with no actions, "Decided: allowed" / "Decided: denied" / "Decided: no longer waiting". It is shown even
 * when no notification of that tag is open (dismissed, or answered here): a push must show one (userVisibleOnly, else
 * the browser shows its own "updated in the background"), and a "Decided" note can never be a stale action.
 */
async function showResolved(note) {
  const [open] = await self.registration.getNotifications({ tag: note.approvalId });
  const item = open && open.data && open.data.type === 'approval' ? open.data : open && open.data && open.data.item ? open.data.item : null;
  const outcome = OUTCOME[note.decision] || 'no longer waiting';
  const by = note.decidedBy && DECIDER[note.decidedBy.type];
  const lines = [item && item.summary, by ? `Decided ${by}.` : null].filter(Boolean);
  await self.registration.showNotification(`Decided: ${outcome}`, {
    body: lines.join('\n'),
    tag: note.approvalId,
    data: { type: 'resolved', approvalId: note.approvalId, decision: note.decision, sessionKey: item ? item.sessionKey : undefined, item: item ? { summary: item.summary, sessionKey: item.sessionKey } : null },
    icon: '/icon-192.png',
    silent: true,
    renotify: false,
    requireInteraction: false,
    actions: [],
  });
  await updateBadge();
}

self.addEventListener('push', (event) => {
  let item = null;
  try {
    item = event.data ? event.data.json() : null;
  } catch {
    item = null;
  }
  if (!item || typeof item.approvalId !== 'string') return;
  if (item.type === 'approval') event.waitUntil(showItem(item));
  else if (item.type === 'resolved') event.waitUntil(showResolved(item));
});

/** Opens (or focuses) the room on the item's session. */
async function openRoom(item) {
  const url = item && item.sessionKey ? `/?session=${encodeURIComponent(item.sessionKey)}` : '/';
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  for (const w of windows) {
    if ('focus' in w) {
      await w.focus();
      if ('navigate' in w) await w.navigate(url).catch(() => undefined);
      return { status: 0 };
    }
  }
  await self.clients.openWindow(url);
  return { status: 0 };
}

/**
 * What a chosen notification action does: "Allow once" / "Deny" send the item's token to the server (the only
 * credential that route takes, good for that one item until it is resolved anywhere); a click elsewhere opens the room.
 */
async function answer(notification, action) {
  const item = notification.data || {};
  if (!ACTIONS.includes(action) || typeof item.token !== 'string') {
    notification.close();
    await updateBadge();
    return openRoom(item);
  }
  let status = 0;
  let body = null;
  try {
    const res = await fetch('/api/push/action', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      credentials: 'omit',
      body: JSON.stringify({ approvalId: item.approvalId, token: item.token, decision: action }),
    });
    status = res.status;
    body = await res.json().catch(() => null);
  } catch (e) {
    body = { status: 'error', error: { code: 'network', message: String(e) } };
  }
  notification.close();
  if (status !== 200) {
    // Decided elsewhere already, or the server is unreachable: say so instead of failing silently.
    const why = body && body.error && body.error.code === 'already_resolved' ? 'It was already decided.' : 'Open crosstalk to decide it.';
    await self.registration.showNotification('Not answered from the notification', { body: `${item.summary || item.approvalId}\n${why}`, tag: `${item.approvalId}:result`, data: { type: 'result', sessionKey: item.sessionKey } });
  }
  await updateBadge();
  return { status, body };
}

self.addEventListener('notificationclick', (event) => event.waitUntil(answer(event.notification, event.action)));
self.addEventListener('notificationclose', (event) => event.waitUntil(updateBadge()));

// The same answer() for a notification's action, asked by a window of this origin ({type, approvalId, action}): an OS
// notification cannot be clicked in a headless browser, so the room's browser test drives the click path this way.
self.addEventListener('message', (event) => {
  const m = event.data;
  if (!m || m.type !== 'crosstalk:notification-action' || typeof m.approvalId !== 'string' || !ACTIONS.includes(m.action)) return;
  event.waitUntil(
    (async () => {
      const [notification] = await self.registration.getNotifications({ tag: m.approvalId });
      const result = notification ? await answer(notification, m.action) : { status: 404, body: { status: 'error', error: { code: 'unknown_notification' } } };
      if (event.source) event.source.postMessage({ type: 'crosstalk:notification-action-result', approvalId: m.approvalId, ...result });
    })(),
  );
});
