// The room's pages in a worker thread of `npm start`'s process (scripts/pages.mjs): Next renders documents here, off the
// gateway's event loop, and asks the gateway's thread for a page's reads by message (lib/trpc/server.tsx). No runtime
// starts here, and it answers only its own server (the key scripts/pages.mjs puts on each request it forwards).
import crypto from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';

const { root, host, port, token, defaultAgentId, key } = workerData;
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
const KEY_HEADER = 'x-crosstalk-pages';
const expected = Buffer.from(key ?? '');
/** Whether a request came from this process's server (its key), not from another local process on this port. */
const fromOwnServer = (req) => {
  const given = Buffer.from(String(req.headers[KEY_HEADER] ?? ''));
  return expected.length > 0 && given.length === expected.length && crypto.timingSafeEqual(given, expected);
};
// The gateway's routes never come here (the server answers them on its own thread): an API path is refused too, read
// as Next will route it (dot segments and %2e resolved, as a URL parser does).
const API = /^\/(api\/|a2a\/|mcp$|login$)/;
const routedPath = (url) => {
  try {
    return new URL(url ?? '/', 'http://h').pathname;
  } catch {
    return '/';
  }
};
const server = http.createServer((req, res) => {
  if (!fromOwnServer(req) || API.test(routedPath(req.url))) {
    res.writeHead(403, { 'content-type': 'text/plain; charset=utf-8' }).end("403: this port serves the room's pages to its own server only\n");
    return;
  }
  delete req.headers[KEY_HEADER];
  handler(req, res);
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  parentPort.postMessage({ type: 'ready', port: server.address().port, ms: Math.round(performance.now() - t0) });
});
