// Keep-alive on the gateway's node:http server (`npm run worker`, tests): a Node client's connection is reused across
// requests. Node's http.Agent (and undici) take a second off the server's `Keep-Alive: timeout=N` hint and do not
// keep a socket whose hint leaves nothing: at N = 1 every request paid a new TCP connection on both sides.
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

function call(agent: http.Agent, method: string, params: unknown): Promise<{ result: any; reused: boolean }> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  return new Promise((resolve, reject) => {
    const req = http.request(`${s.url}/api/gateway`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: `Bearer ${TEST_TOKEN}` } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ result: JSON.parse(Buffer.concat(chunks).toString()).result, reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('keep-alive on the gateway’s node:http server', () => {
  it('a Node client reuses its connection for the next request: a turn is two requests on one connection', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const reused: boolean[] = [];
      for (let i = 0; i < 3; i++) {
        const started = await call(agent, 'agent', { sessionKey: 'agent:main:keep-alive', message: `hello ${i}` });
        const done = await call(agent, 'agent.wait', { runId: started.result.runId, timeoutMs: 10_000 });
        expect(done.result).toMatchObject({ status: 'ok' });
        reused.push(started.reused, done.reused);
      }
      // The first request opens the connection; every later one rides on it.
      expect(reused).toEqual([false, true, true, true, true, true]);
    } finally {
      agent.destroy();
    }
  });
});
