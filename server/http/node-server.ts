// A plain node:http server for the gateway's routes (server/http/node-routes.ts): the headless worker and the tests use it (Next serves the app).
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FullRuntime } from '../runtime-types';
import { serveApi } from './node-routes';

export interface Served {
  url: string;
  /**
   * A graceful stop's first step: no new connections, event streams ended (their
   * clients resume on another process by Last-Event-ID); requests in flight go on and are answered.
   */
  stopAccepting(): Promise<void>;
  /**
   * Resolves when no request is in flight (true), or after `ms` (false). A connection with no request yet counts as
   * in flight: on a busy machine one accepted before the stop may not have been read yet, and its client sent one.
   */
  drained(ms: number): Promise<boolean>;
  close(): Promise<void>;
}

/** A listen that failed (the port in use, not ours to take, an address not on this machine): says which and why. */
export class ListenError extends Error {}

/**
 * Listens on `o.host`:`o.port` and serves the gateway's routes of `rt`. `rt` may still be booting (the worker listens
 * first, so a port in use stops it before it takes any run over): requests wait for it. Rejects with a ListenError
 * when the address cannot be listened on.
 */
export async function serve(runtime: FullRuntime | Promise<FullRuntime>, o: { host?: string; port?: number } = {}): Promise<Served> {
  let rt = runtime instanceof Promise ? null : runtime;
  if (runtime instanceof Promise) void runtime.then((r) => (rt = r), () => undefined);
  // Per connection: its requests so far and those not yet answered (event streams are not counted: they end at the stop).
  const conns = new Map<net.Socket, { requests: number; open: number }>();
  const busy = () => [...conns.values()].some((c) => c.requests === 0 || c.open > 0);
  const streams = new Set<http.IncomingMessage>();
  let stopping = false;
  const server = http.createServer((req, res) => {
    // Event streams: the gateway's and the room's (tRPC subscriptions ask for text/event-stream).
    const isStream = req.method === 'GET' && (!!req.url?.startsWith('/api/gateway/events') || (!!req.url?.startsWith('/api/trpc/') && !!req.headers.accept?.includes('text/event-stream')));
    if (stopping) res.shouldKeepAlive = false;
    if (isStream) {
      if (stopping) {
        res.writeHead(503, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify({ ok: false, error: { code: 'unavailable', message: 'this process is stopping' } }));
        return;
      }
      streams.add(req);
      conns.delete(req.socket);
      res.once('close', () => streams.delete(req));
    } else {
      const c = conns.get(req.socket);
      if (c) {
        c.requests++;
        c.open++;
        res.once('close', () => c.open--);
      }
    }
    if (rt) serveApi(rt, req, res);
    else void (runtime as Promise<FullRuntime>).then((r) => serveApi(r, req, res));
  });
  // As `npm start`'s server (scripts/start.mjs). Node's http.Agent and undici keep a socket for a second less than the
  // server's `Keep-Alive: timeout=N` hint, and not at all when that leaves nothing: at 1 s, every request paid a new
  // connection. A stop does not wait for idle connections (`drained` counts only open requests; `close` ends them).
  server.keepAliveTimeout = 65_000;
  let lastConnection = 0;
  server.on('connection', (socket: net.Socket) => {
    lastConnection = Date.now();
    conns.set(socket, { requests: 0, open: 0 });
    socket.once('close', () => conns.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (e: NodeJS.ErrnoException) => reject(new ListenError(`cannot listen on ${o.host ?? '127.0.0.1'}:${o.port ?? 0}: ${e.code === 'EADDRINUSE' ? 'the port is in use' : e.code === 'EACCES' ? 'permission denied' : e.code === 'EADDRNOTAVAIL' ? 'no such address on this machine' : e.message}${e.code ? ` (${e.code})` : ''}`));
    server.once('error', failed);
    server.listen(o.port ?? 0, o.host ?? '127.0.0.1', () => {
      server.off('error', failed);
      resolve();
    });
  });
  // Once listening, a failed accept (EMFILE: out of file descriptors) is said, not an uncaught 'error' event's end.
  server.on('error', (e) => console.error(`crosstalk: server error: ${e.message}`));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${o.host ?? '127.0.0.1'}:${port}`,
    async stopAccepting() {
      stopping = true;
      for (const req of streams) {
        conns.delete(req.socket);
        req.socket.destroy();
      }
      // Connections the kernel accepted before the stop (a busy event loop has not taken them yet) carry requests
      // their clients count as sent: closing the listening socket would reset them. Take them first: close once no
      // new connection came for a moment (clients route elsewhere by now), or after a second at most.
      // Each check waits for a timer and then for the check phase: a timer that fires after the loop was held (a long
      // task) runs before that iteration's poll, so the connections queued meanwhile are taken only after it.
      const end = Date.now() + 1000;
      do {
        await new Promise((r) => setTimeout(r, 50));
        await new Promise((r) => setImmediate(r)); // after the poll of the listening socket that follows the timer
      } while (Date.now() < end && Date.now() - lastConnection < 100);
      // net.Server's close only: http.Server's would also close connections with no request yet, and one accepted a
      // moment ago carries a request on its way. Idle keep-alive connections end at `close` (or by keepAliveTimeout);
      // every answer from now on says `Connection: close`.
      net.Server.prototype.close.call(server);
    },
    async drained(ms) {
      const end = Date.now() + ms;
      while (busy() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      return !busy();
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

