// A real MCP server over streamable HTTP (stateful), built with @modelcontextprotocol/sdk, whose tools ask questions: for the elicitation routing tests.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { serveMcpSessions } from './serve-sessions';
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
  const { url, close } = await serveMcpSessions(() => makeServer());
  return { url, close };
}
