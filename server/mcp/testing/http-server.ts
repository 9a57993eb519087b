// A real MCP server over streamable HTTP (stateful sessions), built with @modelcontextprotocol/sdk, for the MCP client tests.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { serveMcpSessions } from './serve-sessions';
import { z } from 'zod';

export interface TestMcpHttpServer {
  url: string;
  port: number;
  /** What the tools saw: calls, cancellations, the auth header. */
  seen: string[];
  close(): Promise<void>;
}

function makeServer(seen: string[], die: () => void): McpServer {
  const server = new McpServer({ name: 'test-http', version: '1.0.0' });
  server.registerTool('lookup', { description: 'Looks a word up', inputSchema: { word: z.string() }, annotations: { readOnlyHint: true, openWorldHint: true } }, async ({ word }) => {
    seen.push(`lookup ${word}`);
    return { content: [{ type: 'text', text: `${word}: a word` }] };
  });
  server.registerTool('slow', { description: 'Waits ms milliseconds (cancellable)', inputSchema: { ms: z.number() } }, async ({ ms }, extra) => {
    seen.push('slow started');
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      extra.signal.addEventListener('abort', () => {
        clearTimeout(t);
        seen.push('slow cancelled');
        resolve();
      });
    });
    return { content: [{ type: 'text', text: 'slow done' }] };
  });
  server.registerTool('big', { description: 'Answers 200 KiB of text', inputSchema: {} }, async () => ({ content: [{ type: 'text', text: 'x'.repeat(200 * 1024) }] }));
  // As a server process that dies mid-call looks from the client: every connection cut, the port closed, no answer.
  // The call's response stream is open (a progress notification went out on it) when it is cut.
  server.registerTool('die', { description: 'Goes away mid-call (connections cut, port closed)', inputSchema: {} }, async (_args, extra) => {
    seen.push('die');
    const progressToken = extra._meta?.progressToken;
    if (progressToken === undefined) throw new Error('no progress token: the stream would not be open');
    await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: 1, total: 2 } });
    setTimeout(die, 100);
    return new Promise<never>(() => undefined);
  });
  return server;
}

/** Starts the server on `port` (0: ephemeral) on 127.0.0.1. */
export async function startMcpHttpServer(port = 0, seen: string[] = []): Promise<TestMcpHttpServer> {
  const sessions = await serveMcpSessions(
    (srv) =>
      makeServer(seen, () => {
        srv.close();
        srv.closeAllConnections();
      }),
    { port, onRequest: (req) => void (req.headers.authorization && seen.push(`auth ${req.headers.authorization}`)) },
  );
  return { url: sessions.url, port: sessions.port, seen, close: sessions.close };
}
