// The agent picker and the status panel (issue 4): preview, resume and dismiss a delegate; a delegate's approval marks its parent.
import { expect, test, TOKEN } from './fixtures';
import { rpc } from './support/rpc';

const delegateTo = (agent: string, prompt: string, extra: object = {}) =>
  `/tool delegate_agent ${JSON.stringify({ agent_id: agent, prompt, ...extra })}`;

test('agent picker: preview, resume with a typed prompt, dismiss; the status count drops', async ({ room, page }) => {
  // Open `main` (the default agent's main session) and give it a delegate.
  await expect(room.sessionTitle).toHaveText('agent:main:main');
  await room.waitLive();
  await room.send(delegateTo('researcher', '/reply found it'));
  await expect(room.messages('assistant').filter({ hasText: 'delegate_agent: {' }).last()).toContainText('found it');
  await expect.poll(() => room.statusFigure('reusable-delegates')).toBeGreaterThanOrEqual(1);

  await room.openAgentPicker();
  const item = room.delegateItems().filter({ hasText: 'researcher' }).first();
  await expect(item).toBeVisible();
  await expect(item).toHaveAttribute('data-status', 'idle');
  await expect(item.getByTestId('delegate-turns')).toHaveText('1');
  const conversationId = (await item.getAttribute('data-conversation-id'))!;
  expect(conversationId).toMatch(/^agent:researcher:subagent:/);

  // Preview its last messages.
  await item.getByRole('button', { name: 'Preview last 5 messages' }).click();
  const preview = item.getByRole('region', { name: 'Delegate preview' });
  await expect(preview).toContainText('found it');
  await room.snap('agent-picker-preview');

  // Resume it with a typed prompt and watch the reply arrive.
  await item.getByRole('button', { name: 'Resume conversation' }).click();
  await item.getByRole('textbox', { name: 'Follow-up prompt' }).fill('/reply second answer');
  await item.getByRole('button', { name: 'Send follow-up' }).click();
  const reply = item.getByRole('region', { name: 'Delegate reply' });
  await expect(reply).toContainText('second answer');
  await expect(reply).toHaveAttribute('data-status', 'ok');
  await expect(item.getByTestId('delegate-turns')).toHaveText('2');
  // The parent's transcript records the re-entry, marked "(follow-up)".
  const completed = room.transcript.locator('[data-testid="message"][data-kind="delegate_follow_up_completed"]').last();
  await expect(completed).toContainText('(follow-up)');
  // …showing the prompt it sent and the delegate's response.
  await expect(completed.getByTestId('message-text')).toHaveText('second answer');
  const started = room.transcript.locator('[data-testid="message"][data-kind="delegate_follow_up_started"]').last();
  await expect(started.getByTestId('message-text')).toHaveText('/reply second answer');
  await room.snap('agent-picker-resumed');

  // Dismiss it: it leaves the picker and the status panel's reusable count drops.
  const before = await room.statusFigure('reusable-delegates');
  await item.getByRole('button', { name: 'Dismiss' }).click();
  await expect(room.agentPicker.locator(`[data-conversation-id="${conversationId}"]`)).toHaveCount(0);
  await expect.poll(() => room.statusFigure('reusable-delegates')).toBe(before - 1);
  await expect(page.getByTestId('status-delegate-bytes')).toHaveText(/\d+(\.\d)? (B|KB|MB)/);
  await room.snap('agent-picker-dismissed');
});

test("a delegate's pending approval marks its parent session in the sidebar", async ({ room, request, freshSession }) => {
  await room.open(freshSession);
  await room.send(delegateTo('researcher', '/tool exec {"command":"echo hi"}', { mode: 'detached' }));
  const parent = room.sessionItem(freshSession);
  await expect(parent).toHaveAttribute('data-attention', 'true', { timeout: 20_000 });
  await expect(parent.getByTestId('attention-badge')).toContainText('needs approval');
  // The delegate's own row is marked too, and the status panel counts it.
  await expect(room.sidebar.locator('[data-testid="session-item"][data-kind="subagent"][data-attention="true"]').first()).toBeVisible();
  await expect.poll(() => room.statusFigure('pending-approvals')).toBeGreaterThanOrEqual(1);
  // The agent picker shows the delegate running (waiting on its approval).
  await room.openAgentPicker();
  await expect(room.delegateItems().first()).toHaveAttribute('data-status', 'running');
  await room.snap('delegate-approval-marks-parent');

  // Answer it; the mark goes away.
  const { approvals } = await rpc<{ approvals: Array<{ approvalId: string; sessionKey: string }> }>(request, TOKEN, 'approvals.list', {});
  const mine = approvals.filter((a) => a.sessionKey.includes(':subagent:'));
  for (const a of mine) await rpc(request, TOKEN, 'approvals.resolve', { approvalId: a.approvalId, decision: 'deny', reason: 'test over' });
  await expect(parent).not.toHaveAttribute('data-attention', 'true', { timeout: 20_000 });
});
