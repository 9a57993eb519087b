// A stopping server takes the connections its kernel queued while its loop was busy before it closes its listening
// socket (node-server.ts stopAccepting): closing it with them queued would reset requests their clients count as sent.
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { serve } from './node-server';
import { startTestServer, TEST_TOKEN, type TestServer } from '../testing/harness';

// A client on a loop of its own: told to go, it connects 100 ms later and asks for the agents.
const CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
parentPort.once('message', () => setTimeout(() => {
  const req = http.request(workerData.url + '/api/gateway', { method: 'POST', agent: false, headers: { 'content-type': 'application/json', authorization: 'Bearer ' + workerData.token } }, (res) => {
    let text = '';
    res.on('data', (d) => (text += d));
    res.on('end', () => parentPort.postMessage({ status: res.statusCode, text }));
  });
  req.on('error', (e) => parentPort.postMessage({ error: e.code || e.message }));
  req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'agents.list', params: {} }));
}, 100));`;

describe('stopAccepting', () => {
  let ts: TestServer;
  afterAll(async () => ts?.close());

  it('answers a connection that arrived while its loop was blocked, before closing the listening socket', async () => {
    ts = await startTestServer({ sqlite: true });
    const srv = await serve(ts.rt);
    const w = new Worker(CLIENT, { eval: true, workerData: { url: srv.url, token: TEST_TOKEN } });
    try {
      await once(w, 'online');
      const answer = new Promise<{ status?: number; text?: string; error?: string }>((r) => w.once('message', r));
      const stopped = srv.stopAccepting();
      w.postMessage('go');
      // The loop blocked past the stop's first poll: the client's connection waits in the kernel's accept queue.
      for (const end = Date.now() + 400; Date.now() < end; );
      await stopped;
      const a = await answer;
      expect(a.error).toBeUndefined();
      expect(a.status).toBe(200);
      expect(JSON.parse(a.text!).result.agents.length).toBeGreaterThan(0);
    } finally {
      await w.terminate();
      await srv.close();
    }
  });
});
