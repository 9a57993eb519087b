// Context and cost in the room (issue 13): the session header and status panel show tokens and cost rolled up, and the
// event inspector shows a run's trace id (a server of this test's own, exporting traces to a loopback OTLP receiver).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, openOwnRoom, test } from './fixtures';

test('tokens and cost in the header and the status panel; the inspector shows the trace id', async ({ page, freshSession, ownServer }) => {
  test.setTimeout(120_000);
  const traceIds = new Set<string>();
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const msg = JSON.parse(body || '{}') as { resourceSpans?: Array<{ scopeSpans: Array<{ spans: Array<{ traceId: string }> }> }> };
      for (const rs of msg.resourceSpans ?? []) for (const ss of rs.scopeSpans) for (const sp of ss.spans) traceIds.add(sp.traceId);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  try {
    const server = await ownServer({
      // A steep price so one short turn shows a cost above a cent.
      config: { models: { scripted: { inputPerMTok: 100_000, outputPerMTok: 100_000 } } },
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}` },
    });
    const room = await openOwnRoom(page, server, freshSession);
    await page.getByRole('button', { name: 'Event inspector', exact: true }).click();
    await room.send('count my tokens');
    await expect(room.texts('assistant').filter({ hasText: 'echo: count my tokens' })).toBeVisible();

    const usage = page.getByTestId('session-usage');
    await expect(usage.getByTestId('session-usage-tokens')).toHaveText(/^\d+(\.\d)?k? tok$/);
    await expect(usage.getByTestId('session-usage-cost')).toHaveText(/^\$\d+\.\d\d$/);
    await expect(page.getByTestId('status-tokens')).toHaveText(/^\d+(\.\d)?k? \/ \d+(\.\d)?k?$/);
    await expect(page.getByTestId('status-cost')).toHaveText(/^\$\d+\.\d\d$/);

    const start = room.inspector.locator('[data-testid="event-row"][data-stream="lifecycle"][data-phase="start"]').first();
    const traceId = await start.getAttribute('data-trace-id');
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    await expect(start.getByTestId('event-trace-id')).toHaveText(`trace ${traceId!.slice(0, 8)}`);
    // The same trace reached the collector.
    await expect.poll(() => traceIds.has(traceId!), { timeout: 20_000 }).toBe(true);
    await room.snap('usage-and-trace');
  } finally {
    // The server itself is stopped by the fixture, after the page has left it.
    await new Promise((r) => receiver.close(r));
  }
});
