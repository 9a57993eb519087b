// MCP elicitation in the room (CONTRACT §7): server-everything's elicitation tool asks through a form in the Approval row
// (submitted) and in the Approvals dialog (declined); a URL elicitation shows a link named "Open" with Done / Decline.
import { createRequire } from 'node:module';
import path from 'node:path';
import { expect, openOwnRoom, test } from './fixtures';

const require = createRequire(import.meta.url);
const STDIO_SERVER = path.join(import.meta.dirname, '..', 'server', 'mcp', 'testing', 'stdio-server.mjs');
const EVERYTHING = path.join(path.dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist', 'index.js');
// A server whose one tool asks for a whole number with no bounds, a multiple of 0.5, a share above 0 (exclusive) and a
// ticket with an unanchored pattern (three digits anywhere in it), and answers what it got.
const NUMBERS_SERVER = `const { McpServer } = require(${JSON.stringify(require.resolve('@modelcontextprotocol/sdk/server/mcp.js'))});
const { StdioServerTransport } = require(${JSON.stringify(require.resolve('@modelcontextprotocol/sdk/server/stdio.js'))});
const server = new McpServer({ name: 'numbers', version: '1.0.0' });
server.registerTool('ask', { description: 'Asks for numbers and a ticket by elicitation', inputSchema: {} }, async () => {
  const r = await server.server.elicitInput({ message: 'How many, and which ticket?', requestedSchema: { type: 'object', properties: {
    count: { type: 'integer', title: 'Count' },
    ratio: { type: 'number', title: 'Ratio', multipleOf: 0.5 },
    share: { type: 'number', title: 'Share', exclusiveMinimum: 0, maximum: 1 },
    ticket: { type: 'string', title: 'Ticket', pattern: '[0-9]{3}' },
  }, required: ['count', 'ticket'] } });
  return { content: [{ type: 'text', text: 'asked ' + JSON.stringify(r) }] };
});
server.connect(new StdioServerTransport());`;

test('an MCP elicitation is a form in the Approval row and in the Approvals dialog; URL mode is a link', async ({ page, freshSession, ownServer, expectedConsole }) => {
  test.setTimeout(180_000);
  // The server of this test stops at its end: the room's open event stream is cut.
  expectedConsole.push(/net::ERR_(INCOMPLETE_CHUNKED_ENCODING|CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE)/);
  const server = await ownServer({
    config: { agents: [{ id: 'main', tools: { 'mcp__everything__*': 'auto' } }], mcp: { servers: { everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] } } } },
  });
  const room = await openOwnRoom(page, server, freshSession);
  await expect(page.getByTestId('status-mcp-everything')).toHaveText(/^up · \d+ tools$/, { timeout: 30_000 });

  // Submitted from the Approval row: one labelled field per property (by title), defaults prefilled.
  await room.send('/tool mcp__everything__trigger-elicitation-request {}');
  await expect(room.approval).toBeVisible({ timeout: 30_000 });
  await expect(room.approval).toContainText('Please provide inputs for the following fields:');
  await expect(room.approval.getByLabel('String with default', { exact: true })).toHaveValue('It was a dark and stormy night.');
  await expect(room.approval.getByLabel('Integer', { exact: true })).toHaveValue('42');
  await expect(room.approval.getByLabel('Titled Single Select Enum', { exact: true })).toHaveValue('hero-1');
  // A required field is found by its label exactly too (the star is beside the label, not in its name).
  await room.approval.getByLabel('String', { exact: true }).fill('Ada Lovelace');
  await room.approval.getByLabel('Boolean', { exact: true }).check();
  await room.approval.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(room.approval).toHaveCount(0);
  await expect(room.messages('assistant').filter({ hasText: 'Name: Ada Lovelace' })).toHaveCount(1, { timeout: 30_000 });

  // Declined from the Approvals dialog.
  await room.send('/tool mcp__everything__trigger-elicitation-request {}');
  await expect(room.approval).toBeVisible({ timeout: 30_000 });
  await page.getByRole('button', { name: 'Approvals', exact: true }).click();
  const dialog = page.getByRole('dialog', { name: 'Approvals' });
  await expect(dialog.getByRole('textbox', { name: 'String', exact: true })).toBeVisible();
  await expect(dialog.getByRole('button', { name: 'Cancel', exact: true })).toBeVisible();
  await dialog.getByRole('button', { name: 'Decline', exact: true }).click();
  await expect(dialog.getByTestId('approvals-empty')).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(room.messages('assistant').filter({ hasText: 'User declined' })).toHaveCount(1, { timeout: 30_000 });

  // URL mode: a link named Open (to the server's URL), Done answers accept.
  await room.send('/tool mcp__everything__trigger-url-elicitation {"url":"https://example.com/consent","message":"Open the consent page"}');
  await expect(room.approval).toContainText('Open the consent page', { timeout: 30_000 });
  await expect(room.approval.getByRole('link', { name: 'Open', exact: true })).toHaveAttribute('href', 'https://example.com/consent');
  await expect(room.approval.getByRole('button', { name: 'Decline', exact: true })).toBeVisible();
  await room.approval.getByRole('button', { name: 'Done', exact: true }).click();
  await expect(room.approval).toHaveCount(0);
});

test('a required choice with no default starts unchosen and must be made; a date-time field is sent as RFC 3339', async ({ page, freshSession, ownServer, expectedConsole }) => {
  test.setTimeout(120_000);
  expectedConsole.push(/net::ERR_(INCOMPLETE_CHUNKED_ENCODING|CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE)/);
  const server = await ownServer({ config: { agents: [{ id: 'main', tools: { 'mcp__files__*': 'auto' } }], mcp: { servers: { files: { command: process.execPath, args: [STDIO_SERVER] } } } } });
  const room = await openOwnRoom(page, server, freshSession);
  await expect(page.getByTestId('status-mcp-files')).toHaveText(/^up · \d+ tools$/, { timeout: 30_000 });
  await room.send('/tool mcp__files__schedule {}');
  await expect(room.approval).toContainText('When, and in which colour?', { timeout: 30_000 });
  const colour = room.approval.getByLabel('Colour', { exact: true });
  // Before: the select showed "Red" as chosen while nothing was, and the server refused the form ("content.color is required").
  await expect(colour).toHaveValue('');
  await room.approval.getByLabel('When', { exact: true }).fill('2026-01-02T10:30');
  await room.approval.getByRole('button', { name: 'Submit', exact: true }).click();
  // Not sent: the browser asks for the choice first (nothing reached the server, nothing refused).
  await expect(room.approval).toBeVisible();
  await expect(room.approval).not.toContainText('Could not resolve');
  await colour.selectOption({ label: 'Red' });
  // The schema's bounds are on the input: 12 seats (maximum 9) is stopped by the browser, not refused by the server after.
  const seats = room.approval.getByLabel('Seats', { exact: true });
  await expect(seats).toHaveAttribute('max', '9');
  await seats.fill('12');
  await room.approval.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(room.approval).toBeVisible();
  expect(await seats.evaluate((el: HTMLInputElement) => el.validity.rangeOverflow)).toBe(true);
  await seats.fill('3');
  await room.approval.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(room.approval).toHaveCount(0);
  // Before: "2026-01-02T10:30" as typed, refused ("must be a date-time"): the field could not be answered from the room.
  const answer = room.messages('assistant').filter({ hasText: 'scheduled' });
  await expect(answer).toHaveCount(1, { timeout: 30_000 });
  // The tool's JSON shows as plain text or as Markdown (whose backslash escapes are consumed), depending on when it rendered.
  await expect(answer).toContainText(/"color\\?":\\?"r\\?"/);
  await expect(answer).toContainText(/2026-01-0[12]T\d\d:30:00\.000Z/);
  await expect(answer).toContainText(/"seats\\?":3/);
});

test('the browser refuses what the schema refuses before anything is sent: 1.5 for an integer, a step off multipleOf; a pattern is the server\'s to check', async ({ page, freshSession, ownServer, expectedConsole }) => {
  test.setTimeout(120_000);
  expectedConsole.push(/net::ERR_(INCOMPLETE_CHUNKED_ENCODING|CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE)/);
  // The gateway's refusal of a value (-32602) is a 400 the browser logs.
  expectedConsole.push(/status of 400 \(Bad Request\)/);
  const server = await ownServer({ config: { agents: [{ id: 'main', tools: { 'mcp__numbers__*': 'auto' } }], mcp: { servers: { numbers: { command: process.execPath, args: ['-e', NUMBERS_SERVER] } } } } });
  const room = await openOwnRoom(page, server, freshSession);
  await expect(page.getByTestId('status-mcp-numbers')).toHaveText(/^up · \d+ tools$/, { timeout: 30_000 });
  const resolves: string[] = [];
  page.on('request', (r) => {
    if (/\/api\/trpc\/[^?]*approvals\.resolve/.test(r.url())) resolves.push(r.url());
  });
  await room.send('/tool mcp__numbers__ask {}');
  await expect(room.approval).toContainText('How many, and which ticket?', { timeout: 30_000 });
  const count = room.approval.getByLabel('Count', { exact: true });
  const ratio = room.approval.getByLabel('Ratio', { exact: true });
  const ticket = room.approval.getByLabel('Ticket', { exact: true });
  await expect(count).toHaveAttribute('step', '1');
  await expect(ratio).toHaveAttribute('step', '0.5');
  // The server's pattern is not the input's (the browser would run it on a backtracking engine): it is the field's hint.
  await expect(ticket).not.toHaveAttribute('pattern');
  await expect(room.approval.locator('label', { hasText: /^Ticket$/ })).toHaveAttribute('title', 'must match the pattern [0-9]{3}');
  // An exclusive bound HTML cannot say is in the field's hint (the server still checks it).
  await expect(room.approval.locator('label', { hasText: /^Share$/ })).toHaveAttribute('title', /more than 0/);

  // Before: 1.5 for an integer and 0.3 for a multiple of 0.5 passed the browser, went to the server and came back refused.
  const validity = () => Promise.all([count, ratio].map((f) => f.evaluate((el: HTMLInputElement) => el.validity.stepMismatch)));
  await count.fill('1.5');
  await ratio.fill('0.3');
  await ticket.fill('ab12');
  await room.approval.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(room.approval).toBeVisible();
  expect(await validity()).toEqual([true, true]);
  await expect(room.approval).not.toContainText('Could not resolve');
  expect(resolves, 'nothing sent').toEqual([]);

  // A ticket without three digits goes to the gateway, which checks the pattern and names the field.
  await count.fill('-7');
  await ratio.fill('2.5');
  expect(await validity()).toEqual([false, false]);
  await room.approval.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(room.approval).toContainText(/Could not resolve: .*content\.ticket/);
  expect(resolves).toHaveLength(1);

  // The schema's pattern matches anywhere in the value: three digits amid letters fit.
  await ticket.fill('ab123cd');
  await room.approval.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(room.approval).toHaveCount(0);
  const answer = room.messages('assistant').filter({ hasText: 'asked' });
  await expect(answer).toHaveCount(1, { timeout: 30_000 });
  await expect(answer).toContainText(/"count\\?":-7/);
  await expect(answer).toContainText(/"ratio\\?":2.5/);
  await expect(answer).toContainText(/"ticket\\?":\\?"ab123cd\\?"/);
  expect(resolves).toHaveLength(2);
});

// A server whose form's pattern backtracks for ever on its own default (29 a's and a !): the tab and the gateway must not hang.
const REDOS_SERVER = `const { McpServer } = require(${JSON.stringify(require.resolve('@modelcontextprotocol/sdk/server/mcp.js'))});
const { StdioServerTransport } = require(${JSON.stringify(require.resolve('@modelcontextprotocol/sdk/server/stdio.js'))});
const server = new McpServer({ name: 'redos', version: '1.0.0' });
server.registerTool('ask', { description: 'Asks for a word whose pattern backtracks', inputSchema: {} }, async () => {
  const r = await server.server.elicitInput({ message: 'Which word?', requestedSchema: { type: 'object', properties: {
    word: { type: 'string', title: 'Word', pattern: '^(a+)+$', default: '${'a'.repeat(29)}!' },
  } } });
  return { content: [{ type: 'text', text: 'asked ' + JSON.stringify(r) }] };
});
server.connect(new StdioServerTransport());`;

test("a form whose pattern backtracks for ever hangs neither the tab nor the gateway: the refusal names the field", async ({ page, freshSession, ownServer, expectedConsole }) => {
  test.setTimeout(120_000);
  expectedConsole.push(/net::ERR_(INCOMPLETE_CHUNKED_ENCODING|CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE)/);
  // The gateway's refusal of a value (-32602) is a 400 the browser logs.
  expectedConsole.push(/status of 400 \(Bad Request\)/);
  const server = await ownServer({ config: { agents: [{ id: 'main', tools: { 'mcp__redos__*': 'auto' } }], mcp: { servers: { redos: { command: process.execPath, args: ['-e', REDOS_SERVER] } } } } });
  const room = await openOwnRoom(page, server, freshSession);
  await expect(page.getByTestId('status-mcp-redos')).toHaveText(/^up · \d+ tools$/, { timeout: 30_000 });
  await room.send('/tool mcp__redos__ask {}');
  const word = room.approval.getByLabel('Word', { exact: true });
  // Before: the input carried the pattern: the browser ran it on the default (a backtracking engine without V8's
  // linear fallback froze the tab) and refused Submit, so the gateway never said which field was wrong.
  await expect(word).toHaveValue(`${'a'.repeat(29)}!`, { timeout: 30_000 });
  expect(await page.evaluate(() => 1 + 1)).toBe(2);
  const t = Date.now();
  await room.approval.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(room.approval).toContainText(/Could not resolve: .*content\.word.*\^\(a\+\)\+\$/);
  expect(Date.now() - t).toBeLessThan(10_000);
  await word.fill('aaaa');
  await room.approval.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(room.messages('assistant').filter({ hasText: 'asked' })).toContainText(/"word\\?":\\?"aaaa\\?"/, { timeout: 30_000 });
});
