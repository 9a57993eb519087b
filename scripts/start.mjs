#!/usr/bin/env node
// `npm start`: serves the existing Next build on HOST:PORT, building first only when there is none.
//
// The production server runs inside this process (Next's own `next start` code path, loaded
// in-process) rather than as a child of it: one Node process instead of two saves ~40 MB of RSS
// and ~100 ms of start (see BENCHMARKS.md). CROSSTALK_START_MODE=spawn runs `next start` as a
// child instead (signals forwarded); it exists only to compare the two.
//
// Secrets in the environment (CROSSTALK_TOKEN, *_API_KEY, DATABASE_URL, …) first make this process re-execute
// itself in place without them, and receive them over a pipe (scripts/secrets.mjs), so the server's
// /proc/<pid>/environ holds none of them.
import './require-node.mjs';
import { launchWithoutSecrets } from './secrets.mjs';
import { staticAssets } from './static-assets.mjs';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

await launchWithoutSecrets();

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(root, 'package.json'));
const nextBin = path.join(root, 'node_modules', 'next', 'dist', 'bin', 'next');

process.env.NEXT_TELEMETRY_DISABLED = '1';
const host = process.env.HOST || '127.0.0.1';
const port = parsePort(process.env.PORT);

function parsePort(value) {
  if (value === undefined || value === '') return 3000;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    console.error(`crosstalk: PORT must be an integer 0-65535, got "${value}"`);
    process.exit(1);
  }
  return n;
}

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
const GRACE_MS = Number(process.env.CROSSTALK_SHUTDOWN_GRACE_MS ?? 3000);
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
 * The room's first server render instantiates its modules: ~0.5–1 s in one task on the event loop (and ~19 MB), which
 * in the middle of a first visit stalls every run streaming then (bench/profile-room.ts: a 1,140 ms long task,
 * `requirePage` → `instantiateModule`). Done once instead, shortly after the server is ready: the page rendered for
 * ourselves over loopback. Then what a browser's first visit asks for next, one at a time: the build's chunks the page
 * names (each compressed once, scripts/static-assets.mjs), its manifest and icon (Next's route runtime loads with the
 * first) and the room's API (its module loads with its first request). On a first visit with runs streaming these
 * cost the gateway's loop gaps of 50–240 ms (bench:scale --cpu-prof, BENCHMARKS.md 'Stop 42').
 * CROSSTALK_WARM_ROOM_MS: the delay after listening (default 1000; negative: never).
 */
const WARM_ROOM_MS = Number(process.env.CROSSTALK_WARM_ROOM_MS ?? 1000);
function warmRoom(http, port, token) {
  const t0 = performance.now();
  // A wildcard address is reached on loopback; a named host as it is.
  const loopback = host === '::' ? '::1' : host === '0.0.0.0' ? '127.0.0.1' : host;
  // The page uncompressed (it is read here); the rest as a browser asks for it.
  const get = (p, onBody) => {
    const headers = { authorization: `Bearer ${token}`, ...(p === '/' ? {} : { 'accept-encoding': 'br, gzip' }) };
    const req = http.get({ host: loopback, port, path: p, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => onBody && chunks.push(c));
      res.on('end', () => onBody?.(res.statusCode, Buffer.concat(chunks).toString('utf8')));
    });
    req.on('error', (e) => onBody?.(0, '', e));
  };
  get('/', (status, html, err) => {
    if (err) return console.log(`crosstalk: room not warmed (${err.message}); its first visit loads it`);
    const rendered = Math.round(performance.now() - t0);
    const assets = [...new Set(html.match(/\/_next\/static\/[^"'\s<>?]+/g) ?? [])];
    const routes = [...new Set([...html.matchAll(/<link rel="(?:manifest|icon)" href="(\/[^"]*)"/g)].map((m) => m[1].replace(/&amp;/g, '&')))];
    // The room's API (tRPC, runtime.nodeTrpc) loads its module with its first request: one, so no visit waits for it.
    const rest = [...assets, ...routes, '/api/trpc/agents.list'];
    const next = () => {
      const p = rest.shift();
      if (p) return get(p, next);
      console.log(`crosstalk: room warmed (HTTP ${status}, ${rendered} ms; then ${assets.length} assets, ${routes.length} routes and the room's API in ${Math.round(performance.now() - t0 - rendered)} ms)`);
    };
    next();
  });
}

/**
 * Next's production server inside this process, behind a node:http server of our own: POST /api/gateway (the
 * JSON-RPC hot path), /api/trpc/* (the room's queries and event stream), /mcp and POST /api/channels/* (platform
 * webhooks: an inbound message's way to the model, issue 24.3) go straight to the runtime's node-level handlers,
 * everything else to Next. Next's router costs more than a whole scripted turn; app/api/gateway/route.ts
 * and app/api/trpc/[trpc]/route.ts still serve `next dev`.
 */
async function startInProcess() {
  process.env.NODE_ENV = 'production';
  process.env.NEXT_RUNTIME = 'nodejs';
  const http = await import('node:http');
  // The runtime first, then listen: the gateway answers before Next's own server (its router, the pages' code) is
  // loaded (issue 24 item 5: load nothing the first request does not need). It is the build's instrumentation hook that
  // Next would call (instrumentation.ts), after the .env files Next would load; Next's own call later finds the runtime
  // started (server/runtime.ts keeps it on globalThis).
  require('@next/env').loadEnvConfig(root, false, { info: () => {}, error: console.error });
  const runtimeKey = Symbol.for('crosstalk.runtime');
  const hook = path.join(root, '.next', 'server', 'instrumentation.js');
  if (fs.existsSync(hook)) await require(hook).register?.();
  const runtime = globalThis[runtimeKey] ? await globalThis[runtimeKey] : null;
  // Next is loaded by the first request for it (a page, an asset, the room's warm-up below), not before: ~0.3 s of
  // mostly synchronous module loading that would hold the gateway's first answers. First when there is no runtime
  // (no hook in the build): then Next serves the gateway too, and the server is ready only with it.
  let app;
  let serveNext = null; // Next's request handler, once it is prepared
  let startNext;
  const nextReady = new Promise((resolve) => (startNext = resolve)).then(async () => {
    const t0 = performance.now();
    app = require('next')({ dev: false, dir: root, hostname: host, port });
    const nextHandler = app.getRequestHandler();
    await app.prepare();
    serveNext = nextHandler;
    console.log(`crosstalk: pages ready (Next.js loaded in ${Math.round(performance.now() - t0)} ms)`);
  });
  // A failed prepare fails the start, as it did before.
  nextReady.catch((e) => {
    console.error(`crosstalk: Next.js did not start: ${e?.stack ?? e}`);
    process.exit(1);
  });
  if (!runtime) {
    startNext();
    await nextReady;
  }
  // Pages and Next's routes wait for Next to be ready.
  const handle = (req, res) => {
    if (serveNext) return serveNext(req, res);
    startNext();
    void nextReady.then(() => serveNext(req, res));
  };
  // What lib/security/headers.ts gives Next's responses (next.config.mjs, proxy.ts), for the routes served here:
  // JSON and event streams, never documents.
  const FRAME = { 'X-Frame-Options': 'DENY', 'X-Content-Type-Options': 'nosniff' };
  const apiHeaders = (res) => {
    for (const [k, v] of Object.entries(FRAME)) res.setHeader(k, v);
    res.setHeader('Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'");
  };
  // The build's immutable chunks from memory, compressed once (scripts/static-assets.mjs), with the framing ban.
  const assets = staticAssets(path.join(root, '.next', 'static'), { headers: FRAME });
  const server = http.createServer((req, res) => {
    if (runtime && req.method === 'POST' && (req.url === '/api/gateway' || req.url?.startsWith('/api/gateway?'))) return apiHeaders(res), runtime.nodeGateway(req, res);
    if (runtime?.nodeTrpc && req.url?.startsWith('/api/trpc/')) return apiHeaders(res), runtime.nodeTrpc(req, res);
    if (runtime?.nodeChannels && req.method === 'POST' && req.url?.startsWith('/api/channels/')) return apiHeaders(res), runtime.nodeChannels(req, res);
    if (runtime?.nodeMcp && (req.url === '/mcp' || req.url?.startsWith('/mcp?'))) return apiHeaders(res), runtime.nodeMcp(req, res);
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
    // The warm-up's request for the room loads Next too, when nothing has asked for a page before.
    if (runtime && WARM_ROOM_MS >= 0) setTimeout(() => warmRoom(http, bound, runtime.token), WARM_ROOM_MS).unref();
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
