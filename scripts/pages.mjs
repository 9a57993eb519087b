// The room's pages for `npm start`: a worker thread runs Next (scripts/pages-worker.mjs) and this process forwards it
// every request that is not the gateway's, over loopback, and answers its page's reads (queries of the room's API) by
// message. A page's render (5–13 ms of React for any session, far more on a first visit) and Next's heap then never
// hold the gateway's event loop or its collections (issue 24.2).
import crypto from 'node:crypto';
import http from 'node:http';
import { Worker } from 'node:worker_threads';

/** The header this process puts on every request it forwards: the worker answers nothing else (scripts/pages-worker.mjs). */
export const PAGES_KEY_HEADER = 'x-crosstalk-pages';

// Headers of one connection, not of the request (RFC 9110 §7.6.1).
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']);
const endToEnd = (headers) => Object.fromEntries(Object.entries(headers).filter(([k]) => !HOP.has(k)));

/**
 * The worker starts with the first request for a page and stops once no page was asked for in `idleMs` (default
 * CROSSTALK_PAGES_IDLE_MS, else 5 minutes): a room open in a browser talks to the gateway only (its API and event stream),
 * so Next's ~40 MB are held while people load pages, not while runs stream or the server waits. A first visit after
 * that pays the worker's start (~0.3–1 s) in its own thread, not on the gateway's loop. `query(path, input)`
 * answers the worker's reads as JSON text (runtime.roomQuery); `onThread()` is called once each worker's thread runs.
 * A worker that fails to start answers 502 and the next request tries again; so does one that dies.
 */
export function pagesWorker({ root, host, port, token, defaultAgentId, query, onThread = () => {}, idleMs = Number(process.env.CROSSTALK_PAGES_IDLE_MS ?? 300_000), workerFile = new URL('./pages-worker.mjs', import.meta.url), log = console }) {
  let worker = null;
  let ready = null; // the worker's port (and this side's connections to it), once Next is prepared
  let open = 0; // requests waiting for the worker or forwarded to it
  let idleTimer = null;
  // The worker listens on a loopback port any local process can reach: it answers only requests carrying this key,
  // which only this process sends. Before, a request there for an API route (/api/health) ran Next's app/api route,
  // which booted a second runtime in the worker (SQLite: refused the data dir and took the worker down; PostgreSQL:
  // a second cluster process that died mid-run with the worker).
  const key = crypto.randomBytes(24).toString('base64url');
  const start = () => {
    const w = new Worker(workerFile, { workerData: { root, host, port, token, defaultAgentId, key } });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
    worker = w;
    w.once('online', onThread); // its thread exists: e.g. below the gateway's loop (scripts/thread-priority.mjs)
    ready = new Promise((resolve, reject) => {
      w.on('message', (m) => {
        if (m?.type === 'query') {
          const answer = (a) => w.postMessage({ type: 'answer', id: m.id, ...a });
          return void query(m.path, m.input).then(
            (json) => answer({ json }),
            (e) => answer({ error: { message: String(e?.message ?? e), code: e?.code } }),
          );
        }
        if (m?.type !== 'ready') return;
        log.log(`crosstalk: pages ready (Next.js loaded in a worker thread in ${m.ms} ms)`);
        resolve({ port: m.port, agent });
      });
      w.once('error', (e) => log.error(`crosstalk: the pages' worker failed: ${e?.stack ?? e}`));
      w.once('exit', (code) => {
        if (worker === w) (worker = null), (ready = null);
        agent.destroy(); // its sockets went with it
        reject(new Error(`the pages' worker exited (${code})`));
      });
    });
    ready.catch(() => {});
  };
  const stop = () => {
    idleTimer = null;
    if (open > 0 || !worker) return;
    const w = worker;
    (worker = null), (ready = null);
    void w.terminate();
    log.log(`crosstalk: pages' worker stopped (no page asked for in ${Math.round(idleMs / 1000)} s)`);
  };
  const done = () => {
    open--;
    if (open === 0 && idleMs >= 0 && !idleTimer) idleTimer = setTimeout(stop, idleMs).unref();
  };
  const forward = ({ port: workerPort, agent }, req, res) => {
    const up = http.request({ host: '127.0.0.1', port: workerPort, method: req.method, path: req.url, headers: { ...endToEnd(req.headers), [PAGES_KEY_HEADER]: key }, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers));
      answer.pipe(res);
      answer.on('error', () => res.destroy());
    });
    up.on('error', (e) => {
      if (res.headersSent) return res.destroy();
      res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' }).end(`502: the room's pages did not answer (${e.message})\n`);
    });
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.pipe(up);
  };
  return {
    handle(req, res) {
      open++;
      if (idleTimer) clearTimeout(idleTimer), (idleTimer = null);
      res.once('close', done);
      if (!ready) start();
      ready.then(
        (to) => forward(to, req, res),
        (e) => res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' }).end(`502: ${e.message}\n`),
      );
    },
    /** Whether a worker is running (started or starting). */
    get running() {
      return worker !== null;
    },
    close: () => worker?.terminate(),
  };
}
