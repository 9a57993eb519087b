// A body over the cap is answered 413 on every fetch-style route (/a2a, /mcp, /api/channels), and the client's next
// request on its kept-alive connection is answered, not reset.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer } from '../testing/harness';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

/** One request on `agent` (one kept-alive socket): its status, or the socket error's code. */
function request(agent: http.Agent, path: string, body: string): Promise<number | string> {
  const url = new URL(path, s.url);
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}`, accept: 'application/json, text/event-stream', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    req.end(body);
  });
}

describe('an oversized body on a kept-alive connection', () => {
  it.each(['/a2a/main', '/mcp', '/api/channels/webhook'])('%s: 413, then the next requests are answered (before: reset)', async (path) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const small = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
      const seen = [await request(agent, path, 'x'.repeat(1024 * 1024 + 100)), await request(agent, path, small), await request(agent, path, small)];
      expect(seen[0]).toBe(413);
      expect(seen.slice(1).every((x) => typeof x === 'number')).toBe(true);
    } finally {
      agent.destroy();
    }
  });
});
