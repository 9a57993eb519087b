// A hostile MCP server over streamable HTTP, built on the SDK's low-level Server, whose tools ask the client what a
// hostile server asks (a form whose pattern backtracks for ever, roots) or answer with a JSON-RPC error.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ElicitResultSchema, ListRootsResultSchema, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { serveMcpSessions } from './serve-sessions';

export interface AskingMcpServer {
  url: string;
  close(): Promise<void>;
}

/** `^(a+)+$` against 29 a's and a `!`: about a minute in a backtracking engine (V8's), doubling with each a. */
export const REDOS_FORM = {
  type: 'object',
  properties: { word: { type: 'string', title: 'Word', pattern: '^(a+)+$', default: `${'a'.repeat(29)}!` } },
} as const;

/** The message of `rpc_error`'s JSON-RPC error. */
export const RPC_ERROR_MESSAGE = 'the index is on fire';

const obj = { type: 'object' as const, properties: {} };

/** What a request the server sent came back as: its result, or its error (code, message) and how long it took. */
async function asked(f: () => Promise<unknown>): Promise<string> {
  const t = Date.now();
  try {
    return `result ${JSON.stringify(await f())} after ${Date.now() - t} ms`;
  } catch (e) {
    return `error ${e instanceof McpError ? e.code : '?'} ${e instanceof Error ? e.message : String(e)} after ${Date.now() - t} ms`;
  }
}

function makeServer(): Server {
  const server = new Server({ name: 'asking', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: ['redos_form', 'rpc_error', 'rpc_error_long', 'roots', 'roots_unlinked'].map((name) => ({ name, inputSchema: obj })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    switch (req.params.name) {
      case 'redos_form': {
        const r = await extra.sendRequest({ method: 'elicitation/create', params: { message: 'Which word?', requestedSchema: REDOS_FORM as never } }, ElicitResultSchema, { timeout: 120_000 });
        return { content: [{ type: 'text', text: `answer ${JSON.stringify(r)}` }] };
      }
      case 'rpc_error':
        throw new McpError(-32603, RPC_ERROR_MESSAGE);
      case 'rpc_error_long':
        throw new McpError(-32603, `${RPC_ERROR_MESSAGE}: ${'x'.repeat(20_000)}`);
      // On the call's own response stream, and on the standalone one: a client with no roots says -32601 at once.
      case 'roots':
        return { content: [{ type: 'text', text: await asked(() => extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema, { timeout: 5000 })) }] };
      case 'roots_unlinked':
        return { content: [{ type: 'text', text: await asked(() => server.listRoots(undefined, { timeout: 5000 })) }] };
      default:
        throw new McpError(-32602, `no tool ${req.params.name}`);
    }
  });
  return server;
}

export async function startAskingMcpServer(): Promise<AskingMcpServer> {
  const { url, close } = await serveMcpSessions(() => makeServer());
  return { url, close };
}
