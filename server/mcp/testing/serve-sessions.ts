// The test MCP servers' streamable HTTP plumbing: stateful sessions on 127.0.0.1, each session with a server of its own.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

export interface McpSessions {
  url: string;
  port: number;
  /** Ends every session and stops listening. */
  close(): Promise<void>;
}

/**
 * Serves `makeServer()`'s server per session (an initialize POST opens one; `mcp-session-id` names it after) on `port`
 * (0: ephemeral); `onRequest` sees each request first. `makeServer` is given the HTTP server (a tool that kills it).
 */
export async function serveMcpSessions(makeServer: (srv: http.Server) => { connect(t: StreamableHTTPServerTransport): Promise<void> }, o: { port?: number; onRequest?: (req: http.IncomingMessage) => void } = {}): Promise<McpSessions> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const srv = http.createServer(async (req, res) => {
    o.onRequest?.(req);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const sid = req.headers['mcp-session-id'] as string | undefined;
    let transport = sid ? transports.get(sid) : undefined;
    if (!transport && req.method === 'POST' && isInitializeRequest(body)) {
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => void transports.set(id, transport!) });
      await makeServer(srv).connect(transport);
    }
    if (!transport) {
      res.writeHead(400).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'no session' }, id: null }));
      return;
    }
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((r) => srv.listen(o.port ?? 0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    close: async () => {
      for (const t of transports.values()) await t.close().catch(() => undefined);
      srv.closeAllConnections();
      await new Promise<void>((r) => srv.close(() => r()));
    },
  };
}
