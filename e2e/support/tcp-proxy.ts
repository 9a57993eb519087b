// A loopback TCP proxy the tests can cut and restore, to drop the browser's live connection for real.
import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Drops every open connection and refuses new ones. */
  cut(): Promise<void>;
  /** Accepts connections again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  };
  const makeServer = () =>
    net.createServer((client) => {
      const upstream = net.connect(targetPort, targetHost);
      track(client);
      track(upstream);
      client.pipe(upstream).pipe(client);
      const end = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', end);
      upstream.on('error', end);
      client.on('close', end);
      upstream.on('close', end);
    });
  const listen = (server: net.Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
    });
  const closeServer = (server: net.Server | null) =>
    new Promise<void>((resolve) => {
      if (!server?.listening) return resolve();
      server.close(() => resolve());
    });

  let server: net.Server | null = makeServer();
  const port = await listen(server, 0);
  const dropAll = () => {
    for (const s of sockets) s.destroy();
  };
  return {
    port,
    async cut() {
      const closing = closeServer(server);
      server = null;
      dropAll();
      await closing;
    },
    async restore() {
      server = makeServer();
      await listen(server, port);
    },
    async close() {
      const closing = closeServer(server);
      server = null;
      dropAll();
      await closing;
    },
  };
}
