// A real MCP server over stdio, built with @modelcontextprotocol/sdk, for the MCP client tests (echo, slow, crash, add_tool).
import fs from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ElicitResultSchema, UrlElicitationRequiredError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const log = (line) => process.env.MCP_TEST_LOG && fs.appendFileSync(process.env.MCP_TEST_LOG, `${line}\n`);
log(`start ${process.pid}`);
// Like many real servers (server-everything's timers), one that outlives its stdin: MCP_TEST_LINGER keeps it running.
if (process.env.MCP_TEST_LINGER) setInterval(() => {}, 1 << 30);

const server = new McpServer({ name: 'test-stdio', version: '1.0.0' });
server.registerTool(
  'echo',
  { description: 'Echo the text back', inputSchema: { text: z.string() }, annotations: { readOnlyHint: true } },
  async ({ text }) => ({ content: [{ type: 'text', text: `echo ${text}` }], structuredContent: { echoed: text } }),
);
server.registerTool(
  'remove_all',
  { description: 'Pretends to delete everything', inputSchema: {}, annotations: { destructiveHint: true, readOnlyHint: true } },
  async () => ({ content: [{ type: 'text', text: 'removed' }] }),
);
server.registerTool('fail', { description: 'Always reports an error', inputSchema: {} }, async () => ({ isError: true, content: [{ type: 'text', text: 'it broke' }] }));
server.registerTool('crash', { description: 'The server dies in the middle of this call', inputSchema: {} }, async () => {
  log('crash');
  setTimeout(() => process.exit(3), 20);
  return new Promise(() => {});
});
server.registerTool('slow', { description: 'Waits ms milliseconds (cancellable)', inputSchema: { ms: z.number() } }, async ({ ms }, extra) => {
  log('slow started');
  await new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    extra.signal.addEventListener('abort', () => {
      clearTimeout(t);
      log('slow cancelled');
      resolve();
    });
  });
  return { content: [{ type: 'text', text: 'slow done' }] };
});
server.registerTool('add_tool', { description: 'Adds a tool named name (the server announces the list change)', inputSchema: { name: z.string() } }, async ({ name }) => {
  server.registerTool(name, { description: `added at runtime: ${name}`, inputSchema: {} }, async () => ({ content: [{ type: 'text', text: `${name} ran` }] }));
  return { content: [{ type: 'text', text: `added ${name}` }] };
});

server.registerTool('progress', { description: 'Reports 3 progress steps when the client asked for progress', inputSchema: {} }, async (_args, extra) => {
  const token = extra._meta?.progressToken;
  log(`progress token ${token === undefined ? 'none' : 'given'}`);
  for (let i = 1; i <= 3 && token !== undefined; i++) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: 3, message: `step ${i}` } });
  return { content: [{ type: 'text', text: 'progressed' }] };
});
server.registerTool('trace', { description: 'Answers the traceparent the request carried in _meta', inputSchema: {} }, async (_args, extra) => ({
  content: [{ type: 'text', text: `traceparent ${extra._meta?.traceparent ?? 'none'}` }],
}));

server.registerTool('code', { description: 'Asks for a code of the form ABC-12 by elicitation (the SDK checks the answer against the schema, pattern included) and answers it', inputSchema: {} }, async () => {
  const r = await server.server.elicitInput({ message: 'Which code?', requestedSchema: { type: 'object', properties: { code: { type: 'string', title: 'Code', pattern: '^[A-Z]{3}-[0-9]{2}$' } }, required: ['code'] } });
  return { content: [{ type: 'text', text: `code ${JSON.stringify(r)}` }] };
});

server.registerTool('confirm', { description: 'Asks one yes/no question by elicitation and answers what it got', inputSchema: {} }, async (_args, extra) => {
  const r = await extra.sendRequest(
    { method: 'elicitation/create', params: { message: 'Really do it?', requestedSchema: { type: 'object', properties: { sure: { type: 'boolean', title: 'Sure' } }, required: ['sure'] } } },
    ElicitResultSchema,
  );
  return { content: [{ type: 'text', text: `answer ${JSON.stringify(r)}` }] };
});

// MCP 2025-11-25's URL elicitation by error (-32042): refused until the person has been through the browser step once.
let stepsDone = 0;
server.registerTool('browser_step', { description: 'Needs a browser step first (URLElicitationRequiredError), then answers', inputSchema: {} }, async () => {
  if (stepsDone++ === 0) throw new UrlElicitationRequiredError([{ mode: 'url', message: 'Sign in to the provider', url: 'https://provider.example/authorize?x=1', elicitationId: 'el-1' }], 'This request requires browser-based authorization.');
  return { content: [{ type: 'text', text: 'signed in and done' }] };
});
server.registerTool('schedule', { description: 'Asks for a colour (required, no default), a time and a number of seats (1 to 9) by elicitation, and answers what it got', inputSchema: {} }, async (_args, extra) => {
  const r = await extra.sendRequest(
    {
      method: 'elicitation/create',
      params: {
        message: 'When, and in which colour?',
        requestedSchema: {
          type: 'object',
          properties: {
            color: { type: 'string', title: 'Colour', oneOf: [{ const: 'r', title: 'Red' }, { const: 'g', title: 'Green' }] },
            when: { type: 'string', title: 'When', format: 'date-time' },
            seats: { type: 'integer', title: 'Seats', minimum: 1, maximum: 9 },
          },
          required: ['color', 'when'],
        },
      },
    },
    ElicitResultSchema,
  );
  return { content: [{ type: 'text', text: `scheduled ${JSON.stringify(r)}` }] };
});
server.registerTool('always_step', { description: 'Asks for a browser step however often it is done (URLElicitationRequiredError each time)', inputSchema: {} }, async () => {
  throw new UrlElicitationRequiredError([{ mode: 'url', message: 'Sign in again', url: 'https://provider.example/again' }], 'This request requires browser-based authorization.');
});
server.registerTool('flood', { description: 'Answers 6 MiB of text (over the message cap)', inputSchema: {} }, async () => ({ content: [{ type: 'text', text: 'z'.repeat(6 * 1024 * 1024) }] }));

await server.connect(new StdioServerTransport());
