// A hostile MCP server over streamable HTTP, built on the SDK's low-level Server so it can send what McpServer would
// not: endless pages, thousands of tools, unusable or colliding tool definitions, a catastrophic output `pattern`, floods.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, isInitializeRequest, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

export type HostileMode = 'endless' | 'many' | 'mixed' | 'plain';

export interface HostileMcpServer {
  url: string;
  /** tools/list requests answered. */
  pages(): number;
  close(): Promise<void>;
}

/** `^(a+)+$` against this takes exponential time in a backtracking engine (V8's included). */
export const CATASTROPHIC_INPUT = `${'a'.repeat(40)}!`;

const obj = (properties: Record<string, unknown> = {}) => ({ type: 'object', properties });

/** The `mixed` list: usable tools among unusable and colliding ones. */
export const MIXED_TOOLS = [
  { name: 'ok', description: 'fine', inputSchema: obj({ x: { type: 'string' } }) },
  { name: 'bad_type', description: 'a type no provider takes', inputSchema: obj({ x: { type: 'strnig' } }) },
  { name: 'array_top', description: 'not an object schema', inputSchema: { type: 'array', items: { type: 'string' } } },
  { name: 'huge', description: 'a schema of 100 KiB', inputSchema: obj({ x: { type: 'string', description: 'y'.repeat(100 * 1024) } }) },
  { name: 'a_b', description: 'the name as is', inputSchema: obj() },
  { name: 'a.b', description: 'sanitises to a_b', inputSchema: obj() },
  {
    name: 'redos',
    description: 'its output schema has a catastrophic pattern',
    inputSchema: obj(),
    outputSchema: obj({ s: { type: 'string', pattern: '^(a+)+$' } }),
  },
  { name: 'flood', description: 'answers 6 MiB', inputSchema: obj() },
];

function makeServer(mode: HostileMode, count: () => void): Server {
  const server = new Server({ name: `hostile-${mode}`, version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async (req) => {
    count();
    const page = Number(req.params?.cursor ?? 0);
    if (mode === 'endless') return { tools: [{ name: `t${page}`, inputSchema: obj() }], nextCursor: String(page + 1) };
    if (mode === 'many') return { tools: Array.from({ length: 2000 }, (_, i) => ({ name: `t${i}`, inputSchema: obj() })) };
    // plain: only the usable tools, so a test of calls does not depend on the list being filtered.
    const names = ['ok', 'redos', 'flood'];
    return { tools: (mode === 'plain' ? MIXED_TOOLS.filter((t) => names.includes(t.name)) : MIXED_TOOLS) as never };
  });
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const name = req.params.name;
    if (name === 'redos') return { content: [{ type: 'text', text: 'matched?' }], structuredContent: { s: CATASTROPHIC_INPUT } };
    if (name === 'flood') return { content: [{ type: 'text', text: 'z'.repeat(6 * 1024 * 1024) }] };
    return { content: [{ type: 'text', text: `${name} ran` }] };
  });
  return server;
}

export async function startHostileMcpServer(mode: HostileMode): Promise<HostileMcpServer> {
  let pages = 0;
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const srv = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const sid = req.headers['mcp-session-id'] as string | undefined;
    let transport = sid ? transports.get(sid) : undefined;
    if (!transport && req.method === 'POST' && isInitializeRequest(body)) {
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => void transports.set(id, transport!) });
      await makeServer(mode, () => pages++).connect(transport);
    }
    if (!transport) {
      res.writeHead(400).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'no session' }, id: null }));
      return;
    }
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/mcp`,
    pages: () => pages,
    close: async () => {
      for (const t of transports.values()) await t.close().catch(() => undefined);
      srv.closeAllConnections();
      await new Promise<void>((r) => srv.close(() => r()));
    },
  };
}
