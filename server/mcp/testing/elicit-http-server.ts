// A real MCP server over streamable HTTP (stateful), built with @modelcontextprotocol/sdk, whose tools ask questions: for the elicitation routing tests.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ElicitResultSchema, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export interface ElicitHttpServer {
  url: string;
  close(): Promise<void>;
}

const SURE = { type: 'object' as const, properties: { sure: { type: 'boolean' as const, title: 'Sure' } }, required: ['sure'] };

function makeServer(): McpServer {
  const server = new McpServer({ name: 'test-elicit-http', version: '1.0.0' });
  server.registerTool('slow', { description: 'Waits ms milliseconds (cancellable)', inputSchema: { ms: z.number() } }, async ({ ms }, extra) => {
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      extra.signal.addEventListener('abort', () => {
        clearTimeout(t);
        resolve();
      });
    });
    return { content: [{ type: 'text', text: 'slow done' }] };
  });
  // As the SDK's tools ask: on the call's own response stream (the request's relatedRequestId).
  server.registerTool('confirm', { description: 'Asks one yes/no question during the call and answers what it got', inputSchema: { message: z.string().optional() } }, async ({ message }, extra) => {
    const r = await extra.sendRequest({ method: 'elicitation/create', params: { message: message ?? 'Really do it?', requestedSchema: SURE } }, ElicitResultSchema, { timeout: 120_000 });
    return { content: [{ type: 'text', text: `answer ${JSON.stringify(r)}` }] };
  });
  // Asked with no link to the call (server.elicitInput has no relatedRequestId): it goes on the standalone GET stream.
  server.registerTool('confirm_unlinked', { description: 'Asks one yes/no question outside the call stream and answers what it got', inputSchema: {} }, async () => {
    const r = await server.server.elicitInput({ message: 'Unlinked: really?', requestedSchema: SURE }, { timeout: 120_000 });
    return { content: [{ type: 'text', text: `answer ${JSON.stringify(r)}` }] };
  });
  return server;
}

/** Starts the server on an ephemeral port on 127.0.0.1. */
export async function startElicitHttpServer(): Promise<ElicitHttpServer> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const srv = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const sid = req.headers['mcp-session-id'] as string | undefined;
    let transport = sid ? transports.get(sid) : undefined;
    if (!transport && req.method === 'POST' && isInitializeRequest(body)) {
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => void transports.set(id, transport!) });
      await makeServer().connect(transport);
    }
    if (!transport) {
      res.writeHead(400).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'no session' }, id: null }));
      return;
    }
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      for (const t of transports.values()) await t.close().catch(() => undefined);
      srv.closeAllConnections();
      await new Promise<void>((r) => srv.close(() => r()));
    },
  };
}
