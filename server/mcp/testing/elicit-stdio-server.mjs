// A real MCP server over stdio, built with @modelcontextprotocol/sdk, whose tools ask questions: for the elicitation routing tests.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const SURE = { type: 'object', properties: { sure: { type: 'boolean', title: 'Sure' } }, required: ['sure'] };
const server = new McpServer({ name: 'test-elicit-stdio', version: '1.0.0' });
server.registerTool('slow', { description: 'Waits ms milliseconds (cancellable)', inputSchema: { ms: z.number() } }, async ({ ms }, extra) => {
  await new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    extra.signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });
  return { content: [{ type: 'text', text: 'slow done' }] };
});
server.registerTool('confirm', { description: 'Asks one yes/no question and answers what it got', inputSchema: {} }, async (_args, extra) => {
  const r = await extra.sendRequest({ method: 'elicitation/create', params: { message: 'Really do it?', requestedSchema: SURE } }, ElicitResultSchema, { timeout: 120_000 });
  return { content: [{ type: 'text', text: `answer ${JSON.stringify(r)}` }] };
});
// A question that comes after its call was cancelled (the cancellation and the question crossed on the wire).
server.registerTool('ask_when_cancelled', { description: 'Waits; once cancelled, asks a question', inputSchema: {} }, async (_args, extra) => {
  process.stderr.write('waiting to be cancelled\n');
  await new Promise((resolve) => extra.signal.addEventListener('abort', resolve));
  server.server.elicitInput({ message: 'Asked after my call was cancelled', requestedSchema: SURE }, { timeout: 120_000 }).then(
    (r) => process.stderr.write(`late answer ${JSON.stringify(r)}\n`),
    (e) => process.stderr.write(`late error ${e.message}\n`),
  );
  return { content: [{ type: 'text', text: 'cancelled' }] };
});

await server.connect(new StdioServerTransport());
