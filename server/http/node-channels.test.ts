// The runtime's node-level channel inbound (scripts/start.mjs routes POST /api/channels/* to it instead of Next):
// a signed webhook message starts a run in the peer's session; a bad signature is 401, an unknown channel 404.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { signWebhook } from '../webhooks/signature';

const SECRET = 'node-channels-secret';
let s: TestServer;
let srv: http.Server;
let base = '';

beforeAll(async () => {
  s = await startTestServer({ config: { channels: { webhook: { secret: SECRET, dmPolicy: 'open' } } } });
  // Served the way scripts/start.mjs does: only the runtime's node handler, no Next, no node-server routing.
  srv = http.createServer((req, res) => s.rt.nodeApi(req, res));
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => srv?.close(r));
  await s?.close();
});

const post = async (path: string, body: string, headers: Record<string, string>) => {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe('rt.nodeApi: POST /api/channels', () => {
  it('a signed webhook message is accepted and answered in the peer session; bad signature 401; unknown channel 404', async () => {
    const body = JSON.stringify({ from: 'peer-nc', text: 'hello from the node path', messageId: 'nc-1' });
    const ok = await post('/api/channels/webhook', body, signWebhook(SECRET, body));
    expect(ok.status).toBe(200);
    const row = await until(async () => (await s.rt.store.db.selectFrom('messages').select(['session_key', 'content']).where('content', 'like', '%hello from the node path%').executeTakeFirst()) ?? undefined);
    expect(row.session_key).toContain('peer-nc');
    expect((await post('/api/channels/webhook', body, signWebhook('wrong', body))).status).toBe(401);
    expect((await post('/api/channels/nope%2F', body, {})).status).toBe(404);
  });
});
