// Page object for the web room: finds controls by the accessible names of CONTRACT §7 and data-testids.
import { expect, type Locator, type Page } from '@playwright/test';

export class RoomPage {
  readonly sidebar: Locator;
  readonly composer: Locator;
  readonly transcript: Locator;
  readonly toolbox: Locator;
  readonly approval: Locator;
  readonly reason: Locator;
  readonly sessionTitle: Locator;
  readonly agentPicker: Locator;
  readonly statusPanel: Locator;
  readonly inspector: Locator;

  constructor(readonly page: Page) {
    this.sidebar = page.getByTestId('sidebar');
    this.composer = page.getByRole('textbox', { name: 'Message', exact: true });
    this.transcript = page.getByTestId('transcript');
    this.toolbox = page.getByTestId('toolbox');
    this.approval = page.getByRole('region', { name: 'Approval', exact: true });
    this.reason = this.approval.getByRole('textbox', { name: 'Reason', exact: true });
    this.sessionTitle = page.getByTestId('session-title');
    this.agentPicker = page.getByTestId('agent-picker');
    this.statusPanel = page.getByTestId('status-panel');
    this.inspector = page.getByTestId('event-inspector');
  }

  async login(token: string): Promise<void> {
    await this.page.goto(`/login?token=${encodeURIComponent(token)}`);
    await expect(this.page).toHaveURL(/\/$/);
  }

  /** Opens a session by deep link (a fresh key per test keeps tests independent). */
  async open(sessionKey: string): Promise<void> {
    await this.page.goto(`/?session=${encodeURIComponent(sessionKey)}`);
    await expect(this.sessionTitle).toHaveText(sessionKey);
    await this.waitLive();
  }

  async waitLive(): Promise<void> {
    await expect(this.page.getByTestId('status-bar')).toHaveAttribute('data-connection', 'connected');
  }

  agent(agentId: string): Locator {
    return this.page.getByTestId(`agent-item-${agentId}`);
  }

  async send(text: string): Promise<void> {
    await this.composer.fill(text);
    await this.composer.press('Enter');
    await expect(this.composer).toHaveValue('');
  }

  /** Transcript rows of a role (user / assistant / tool / system), excluding the streaming bubble. */
  messages(role: 'user' | 'assistant' | 'tool' | 'system'): Locator {
    return this.transcript.locator(`[data-testid="message"][data-role="${role}"]`);
  }

  /** The text bodies of a role's rows: exact-text matching without the author/time line. */
  texts(role: 'user' | 'assistant' | 'tool' | 'system'): Locator {
    return this.messages(role).getByTestId('message-text');
  }

  /** One card per call: `tool_call` is every card, `tool_result` the cards whose result is in (call and result are merged). */
  toolCards(kind: 'tool_call' | 'tool_result'): Locator {
    return this.transcript.locator(kind === 'tool_call' ? '[data-testid="tool-card"]' : '[data-testid="tool-card"][data-has-result="true"]');
  }

  button(name: 'Allow once' | 'Allow always' | 'Deny'): Locator {
    return this.approval.getByRole('button', { name, exact: true });
  }

  /** The sidebar row of a session. */
  sessionItem(sessionKey: string): Locator {
    return this.sidebar.locator(`[data-testid="session-item"][data-session-key="${sessionKey}"]`);
  }

  /** A figure of the status panel as a number (e.g. 'reusable-delegates', 'pending-approvals'). */
  async statusFigure(id: string): Promise<number> {
    return Number(await this.page.getByTestId(`status-${id}`).innerText());
  }

  async openAgentPicker(): Promise<void> {
    await this.page.getByRole('button', { name: 'Agent picker', exact: true }).click();
    await expect(this.agentPicker).toBeVisible();
  }

  delegateItems(): Locator {
    return this.agentPicker.getByTestId('delegate-item');
  }

  /** Saves a screenshot under e2e/screenshots/ (git-ignored). */
  async snap(name: string): Promise<void> {
    await this.page.screenshot({ path: `e2e/screenshots/${name}.png` });
  }
}
