#!/usr/bin/env node
// `npm start`: serves the existing Next build on HOST:PORT, building first only when there is none.
//
// The production server runs inside this process rather than as a child of it: the gateway on the main thread, Next's
// own server (its `next start` code path) in a worker thread for the pages (scripts/pages.mjs). One process instead of
// two saves ~40 MB of RSS and ~100 ms of start (see BENCHMARKS.md). CROSSTALK_START_MODE=spawn runs `next start` as a
// child instead (signals forwarded); it exists only to compare the two.
//
// Secrets in the environment (CROSSTALK_TOKEN, *_API_KEY, DATABASE_URL, …) first make this process re-execute
// itself in place without them, and receive them over a pipe (scripts/secrets.mjs), so the server's
// /proc/<pid>/environ holds none of them.
import './require-node.mjs';
import { launchWithoutSecrets } from './secrets.mjs';
import { staticAssets } from './static-assets.mjs';
import { pagesWorker } from './pages.mjs';
import { keepHelpersLow, lowerHelperThreads } from './thread-priority.mjs';
import { checkEnvNumbers, EnvNumberError, envNumber } from '../server/env-number.mjs';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import module, { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

await launchWithoutSecrets();

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(root, 'package.json'));
// Node's compile cache (V8's code cache of every module this process compiles, kept beside the build): a start after
// the first one loads the gateway's modules without compiling them again (issue 24.5, BENCHMARKS.md 'Stop 44'). It is
// written after the warm-up (below) and at exit; NODE_DISABLE_COMPILE_CACHE=1 turns it off.
module.enableCompileCache?.(path.join(root, '.next', 'cache', 'node-compile-cache'));
const nextBin = path.join(root, 'node_modules', 'next', 'dist', 'bin', 'next');

process.env.NEXT_TELEMETRY_DISABLED = '1';
// Every numeric setting (PORT, CROSSTALK_SHUTDOWN_GRACE_MS, …) by the worker's rule (server/env-number.mjs), before
// anything is built or started: a bad one stops here with one line naming it (before: a NaN timer, a 1 ms sweep …).
try {
  checkEnvNumbers(process.env);
} catch (e) {
  if (!(e instanceof EnvNumberError)) throw e;
  console.error(`crosstalk: ${e.message}`);
  process.exit(1);
}
const host = process.env.HOST || '127.0.0.1';
const port = envNumber('PORT');

if (!fs.existsSync(nextBin)) {
  console.error('crosstalk: node_modules is missing or incomplete — run `npm install` first.');
  process.exit(1);
}

// Build only when there is no build at all; a stale build is the user's call (`npm run build`).
if (!fs.existsSync(path.join(root, '.next', 'BUILD_ID'))) {
  console.log('crosstalk: no build found (.next/BUILD_ID) — running `next build` first…');
  const env = { ...process.env };
  delete env.NODE_ENV; // `next build` sets production itself and warns on anything else
  const r = spawnSync(process.execPath, [nextBin, 'build'], { cwd: root, stdio: 'inherit', env });
  if (r.status !== 0) {
    console.error(`crosstalk: \`next build\` failed (${r.signal ?? `exit ${r.status}`}); not starting.`);
    process.exit(r.status || 1);
  }
}

// Next's graceful shutdown waits for every open connection, and an SSE stream never ends by itself:
// give it a grace period, and let a second Ctrl+C end things at once.
const GRACE_MS = envNumber('CROSSTALK_SHUTDOWN_GRACE_MS');
let signals = 0;
const exitCode = (sig) => 128 + (os.constants.signals[sig] ?? 0);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    signals += 1;
    if (signals > 1) process.exit(exitCode(sig));
    // The runtime's graceful stop (below) takes GRACE_MS to let runs finish and hand the rest over; this is the backstop.
    setTimeout(() => {
      console.error(`crosstalk: still shutting down after ${GRACE_MS + 2000} ms (open connections); exiting`);
      process.exit(exitCode(sig));
    }, GRACE_MS + 2000).unref();
  });
}

if (process.env.CROSSTALK_START_MODE === 'spawn') {
  startChild();
} else {
  await startInProcess();
}

/**
 * The room's API (tRPC) loads its module with its first request: ~50–100 ms on the event loop that, in the middle of a
 * first visit with runs streaming, would stall them. Done once instead, shortly after the server is ready, over
 * loopback with our own token. (The pages themselves render in a worker thread started by the first visit, so their
 * modules never load on this loop: scripts/pages.mjs.) CROSSTALK_WARM_ROOM_MS: the delay after listening (default
 * 1000; negative: never).
 */
const WARM_ROOM_MS = envNumber('CROSSTALK_WARM_ROOM_MS');
/** This server from inside its process: a wildcard address is reached on loopback, a named host as it is. */
const loopbackHost = () => (host === '::' ? '::1' : host === '0.0.0.0' ? '127.0.0.1' : host);
function warmRoom(http, port, token) {
  const t0 = performance.now();
  const req = http.get({ host: loopbackHost(), port, path: '/api/trpc/agents.list', headers: { authorization: `Bearer ${token}` } }, (res) => {
    res.resume();
    res.on('end', () => {
      console.log(`crosstalk: room's API warmed (HTTP ${res.statusCode}, ${Math.round(performance.now() - t0)} ms)`);
      module.flushCompileCache?.(); // nothing to write when the cache is off
    });
  });
  req.on('error', (e) => console.log(`crosstalk: room's API not warmed (${e.message}); its first request loads it`));
}

/**
 * The gateway and Next's production server in this process, behind a node:http server of our own: the gateway's routes
 * (POST /api/gateway, the JSON-RPC hot path; /api/trpc/*, the room's queries and event stream; the event streams, /mcp,
 * A2A, POST /api/channels/* (platform webhooks: an inbound message's way to the model, issue 24.3), /login) go straight
 * to the runtime's node-level handlers (runtime.nodeApi), the build's chunks are served from memory, and pages go to
 * Next in a worker thread (scripts/pages.mjs). Next's router costs more than a whole scripted turn, and a page's render
 * would hold the gateway's loop; app/api/* and app/login still serve `next dev`.
 */
async function startInProcess() {
  process.env.NODE_ENV = 'production';
  process.env.NEXT_RUNTIME = 'nodejs';
  const http = await import('node:http');
  // The runtime first, then listen: the gateway answers without Next's own server (its router, the pages' code)
  // (issue 24 item 5: load nothing the first request does not need). It is the build's instrumentation hook that Next
  // would call (instrumentation.ts), after the .env files Next would load.
  require('@next/env').loadEnvConfig(root, false, { info: () => {}, error: console.error });
  const runtimeKey = Symbol.for('crosstalk.runtime');
  const hook = path.join(root, '.next', 'server', 'instrumentation.js');
  if (fs.existsSync(hook)) await require(hook).register?.();
  const runtime = globalThis[runtimeKey] ? await globalThis[runtimeKey] : null;
  // Pages: with a runtime, Next runs in a worker thread (scripts/pages.mjs), started by the first request for a page,
  // not before: ~0.3 s of mostly synchronous module loading, and then every page's render, that would otherwise hold
  // the gateway's loop. Without one (no hook in the build), Next is loaded here, first, and
  // serves the gateway too; the server is ready only with it.
  let app;
  let pages = null;
  let handle;
  if (runtime) {
    pages = pagesWorker({ root, host, port, token: runtime.token, defaultAgentId: runtime.config.defaultAgentId, query: (p, input) => runtime.roomQuery(p, input), onThread: () => lowerHelperThreads() });
    handle = pages.handle;
  } else {
    const t0 = performance.now();
    app = require('next')({ dev: false, dir: root, hostname: host, port });
    handle = app.getRequestHandler();
    await app.prepare();
    console.log(`crosstalk: pages ready (Next.js loaded in ${Math.round(performance.now() - t0)} ms)`);
  }
  // The build's immutable chunks from memory, compressed once (scripts/static-assets.mjs), with the framing ban that
  // next.config.mjs gives Next's responses (lib/security/headers.ts).
  const FRAME = { 'X-Frame-Options': 'DENY', 'X-Content-Type-Options': 'nosniff' };
  const assets = staticAssets(path.join(root, '.next', 'static'), { headers: FRAME });
  const server = http.createServer((req, res) => {
    // The gateway's routes (API, event streams, A2A, MCP, login) on this thread; pages and the rest to the worker.
    if (runtime?.nodeApi(req, res)) return;
    if (req.url?.startsWith('/_next/static/')) return assets(req, res, () => handle(req, res));
    handle(req, res);
  });
  server.keepAliveTimeout = 65_000;
  server.on('error', (e) => {
    console.error(`crosstalk: cannot listen on ${host}:${port}: ${e.message}`);
    process.exit(1);
  });
  server.listen(port, host, () => {
    const addr = server.address();
    const bound = typeof addr === 'object' && addr ? addr.port : port;
    console.log(`crosstalk: listening on http://${host}:${bound}${runtime ? '' : ' (runtime not started by instrumentation: gateway served by Next)'}`);
    if (runtime && WARM_ROOM_MS >= 0) setTimeout(() => warmRoom(http, bound, runtime.token), WARM_ROOM_MS).unref();
    // The loop above its helper threads from here on (scripts/thread-priority.mjs; CROSSTALK_HELPER_NICE=0: not).
    keepHelpersLow();
  });
  let inFlight = 0;
  server.on('request', (req, res) => {
    inFlight++;
    res.once('close', () => inFlight--);
  });
  // A graceful stop (server/shutdown.ts): stop accepting, let runs that end within the grace finish, hand the rest
  // to the other processes (or the next start), answer the requests in flight, then close the store.
  const close = async () => {
    server.close();
    server.closeIdleConnections?.();
    void app?.close?.();
    if (!runtime) return;
    const end = Date.now() + GRACE_MS;
    await runtime.orchestrator.shutdown({ graceMs: GRACE_MS });
    while (inFlight > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    runtime.orchestrator.endWaits();
    void pages?.close();
    await new Promise((r) => setTimeout(r, 50));
    server.closeAllConnections?.();
    await runtime.close().catch((e) => console.error(`crosstalk: closing the runtime failed: ${e.message}`));
    process.exit(0);
  };
  process.once('SIGINT', close);
  process.once('SIGTERM', close);
}

/** `next start` as a child process, with SIGINT/SIGTERM forwarded and its exit status passed on. */
function startChild() {
  // The project dir is passed explicitly, so the caller's cwd (./data, ./crosstalk.config.json) is kept.
  const child = spawn(process.execPath, [nextBin, 'start', root, '-H', host, '-p', String(port)], {
    stdio: 'inherit',
    env: { ...process.env, NODE_ENV: 'production' },
  });
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signals > 1 ? 'SIGKILL' : sig);
    });
  }
  // The grace timer above exits this process; take the child along.
  process.on('exit', () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  child.on('exit', (code, signal) => {
    process.exit(signal ? exitCode(signal) : (code ?? 1));
  });
}
