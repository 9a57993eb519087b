// The room's pages in a worker thread of `npm start`'s process (scripts/pages.mjs): Next renders documents here, off the
// gateway's event loop, and asks the gateway's thread for a page's reads by message (lib/trpc/server.tsx). No runtime
// starts here.
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';

const { root, host, port, token, defaultAgentId } = workerData;
// A query of the room's API, answered by the gateway's thread as JSON text (runtime.roomQuery).
let nextId = 0;
const waiting = new Map();
parentPort.on('message', (m) => {
  const w = m?.type === 'answer' ? waiting.get(m.id) : undefined;
  if (!w) return;
  waiting.delete(m.id);
  if (m.error) w.reject(Object.assign(new Error(m.error.message), { code: m.error.code }));
  else w.resolve(JSON.parse(m.json));
});
const query = (path, input) =>
  new Promise((resolve, reject) => {
    const id = ++nextId;
    waiting.set(id, { resolve, reject });
    parentPort.postMessage({ type: 'query', id, path, input });
  });
// Read by lib/trpc/server.tsx (the page's reads) and instrumentation.ts (which then boots nothing).
globalThis[Symbol.for('crosstalk.pages')] = { token, defaultAgentId, query };

const t0 = performance.now();
const require = createRequire(path.join(root, 'package.json'));
const app = require('next')({ dev: false, dir: root, hostname: host, port });
const handler = app.getRequestHandler();
await app.prepare();
const server = http.createServer((req, res) => handler(req, res));
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  parentPort.postMessage({ type: 'ready', port: server.address().port, ms: Math.round(performance.now() - t0) });
});
