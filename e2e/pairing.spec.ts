// Channel pairing in the room: an unknown sender's message is held, the request shows with its code, Approve runs it.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, test, TOKEN } from './fixtures';

const SECRET = 'e2e-webhook-secret';

test('Pairing approve runs the held message', async ({ page, ownServer }) => {
  test.setTimeout(120_000);
  // The sender's side of the webhook channel: it receives the pairing code and, later, the agent's reply.
  const received: Array<{ to: string; text: string }> = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push(JSON.parse(body));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  try {
    const server = await ownServer({ config: { channels: { webhook: { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/in`, secret: SECRET } } } });
    const origin = server.origin;
    let n = 0;
    const post = async (text: string) => {
      const body = JSON.stringify({ from: 'alice', text, messageId: `m-${Date.now()}-${n++}` });
      const ts = String(Math.floor(Date.now() / 1000)); // CONTRACT §5: the HMAC of "<timestamp>.<body>"
      const res = await fetch(`${origin}/api/channels/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-crosstalk-timestamp': ts, 'x-crosstalk-signature': `sha256=${crypto.createHmac('sha256', SECRET).update(`${ts}.${body}`).digest('hex')}` },
        body,
      });
      expect(res.status).toBe(200);
    };
    await post('hello from alice');
    // Held, not run: the sender got a code instead of a reply.
    await expect.poll(() => received.length).toBe(1);
    const code = /pairing code is ([A-Z0-9]+)/.exec(received[0]!.text)?.[1];
    expect(code).toBeTruthy();

    await page.goto(`${server.origin}/login?token=${TOKEN}`);
    const request = page.getByRole('listitem', { name: 'Pairing request from webhook sender alice' });
    await expect(request).toBeVisible();
    await expect(request).toContainText(code!);
    await expect(request).toContainText('hello from alice');
    await request.getByRole('button', { name: 'Approve' }).click();
    await expect(page.getByTestId('pairing-request')).toHaveCount(0);

    // The held message ran: the agent's reply went back to alice, and it is in her session's transcript.
    await expect.poll(() => received.map((r) => r.text)).toContain('echo: hello from alice');
    await page.goto(`${server.origin}/?session=${encodeURIComponent('agent:main:webhook:direct:alice')}`);
    await expect(page.getByText('echo: hello from alice')).toBeVisible();

    // Her next run asks before a tool the operator's runs use freely, and the card says whose trust it is.
    await post('/tool sessions_list {}');
    await expect(page.getByRole('region', { name: 'Approval' })).toBeVisible();
    await expect(page.getByTestId('approval-trust')).toContainText('webhook:alice');
  } finally {
    // The server itself is stopped by the fixture, after the page has left it.
    await new Promise<void>((r) => receiver.close(() => r()));
  }
});
