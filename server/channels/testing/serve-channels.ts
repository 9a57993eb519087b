// Serves POST /api/channels/<channel> for a test runtime over real HTTP on loopback, through the same handler as the Next route.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FullRuntime } from '../../runtime-types';
import { handleChannelInbound } from '../../http/channel-inbound';

export async function serveChannels(rt: FullRuntime): Promise<{ url: string; post(channel: string, body: string, headers?: Record<string, string>): Promise<{ status: number; body: any }>; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const m = /^\/api\/channels\/([^/?]+)/.exec(req.url ?? '');
      if (!m || req.method !== 'POST') {
        res.writeHead(404);
        return void res.end();
      }
      const request = new Request(`http://127.0.0.1${req.url}`, { method: 'POST', headers: req.headers as Record<string, string>, body: Buffer.concat(chunks) });
      const response = await handleChannelInbound(rt, decodeURIComponent(m[1]!), request);
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    async post(channel, body, headers = {}) {
      const res = await fetch(`${url}/api/channels/${channel}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
