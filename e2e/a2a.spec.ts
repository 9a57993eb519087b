// A2A through the built app (Next's app/a2a routes): the card without a token, message/send with it, and an A2A task's approval resolved in the room.
import { expect, test, TOKEN } from './fixtures';

const a2a = async (request: import('@playwright/test').APIRequestContext, method: string, params: object, token: string | null = TOKEN) => {
  const res = await request.post('/a2a/main', {
    headers: token ? { authorization: `Bearer ${token}` } : {},
    data: { jsonrpc: '2.0', id: 1, method, params },
  });
  return { status: res.status(), body: await res.json() };
};

const send = (contextId: string, text: string, blocking = true) => ({
  message: { kind: 'message', role: 'user', messageId: `m-${contextId}-${text.length}`, contextId, parts: [{ kind: 'text', text }] },
  configuration: { blocking },
});

test('an A2A client reaches an agent through the app, and its task waits on an approval given in the room', async ({ room, page, request }) => {
  const card = await request.get('/a2a/main/.well-known/agent-card.json');
  expect(card.status()).toBe(200);
  const body = await card.json();
  expect(body.supportedInterfaces[0].url).toMatch(/\/a2a\/main$/);
  expect((await a2a(request, 'message/send', send('e2e-noauth', 'hi'), null)).status).toBe(401);

  const ctx = `e2e-${Date.now().toString(36)}`;
  const sent = await a2a(request, 'message/send', send(ctx, 'from an A2A client'));
  expect(sent.body.result).toMatchObject({ kind: 'task', contextId: ctx, status: { state: 'completed' } });

  // A task that needs an approval: non-blocking send, then "Allow once" in the room.
  const pending = await a2a(request, 'message/send', send(ctx, '/tool exec {"command":"echo via-room"}', false));
  const taskId = pending.body.result.id as string;
  const sessionKey = `agent:main:a2a:${ctx}`;
  await room.open(sessionKey);
  await expect(page.getByText('echo: from an A2A client')).toBeVisible();
  await expect.poll(async () => (await a2a(request, 'tasks/get', { id: taskId })).body.result.status.state).toBe('input-required');
  await expect(room.approval).toBeVisible();
  await room.button('Allow once').click();
  await expect.poll(async () => (await a2a(request, 'tasks/get', { id: taskId })).body.result.status.state, { timeout: 20_000 }).toBe('completed');
  const done = await a2a(request, 'tasks/get', { id: taskId });
  expect(done.body.result.artifacts[0].parts[0].text).toContain('via-room');
  await expect(room.sessionItem(sessionKey)).toBeVisible();
});
