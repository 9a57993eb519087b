// A hostile MCP server over streamable HTTP, built on the SDK's low-level Server so it can send what McpServer would
// not: endless pages, thousands of tools, unusable or colliding tool definitions, a catastrophic output `pattern`, floods.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { serveMcpSessions } from './serve-sessions';

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
  const { url, close } = await serveMcpSessions(() => makeServer(mode, () => pages++));
  return { url, pages: () => pages, close };
}
