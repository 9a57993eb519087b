// An MCP server's tool list, read within the caps (server/mcp/limits.ts): pages, tools and each tool's size are
// bounded, and a tool whose definition is unusable is left out and reported instead of failing the whole list.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type Tool, ToolSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { MAX_LIST_PAGES, MAX_TOOL_BYTES, MAX_TOOLS } from './limits';
import { inputSchemaProblem } from './schema-check';

/** A tool (or a part of the list) left out, and why. */
export interface SkippedTool {
  tool: string;
  reason: string;
}

export interface ToolListing {
  tools: Tool[];
  skipped: SkippedTool[];
}

// Each tool is checked on its own below, so one bad entry does not fail the page (as the SDK's strict schema would).
const LoosePage = z.looseObject({ tools: z.array(z.unknown()), nextCursor: z.string().optional() });

const nameOf = (t: unknown) => (typeof (t as { name?: unknown })?.name === 'string' ? String((t as { name: string }).name).slice(0, 200) : '(no name)');

/** Why a listed tool cannot be offered to a model, or null. */
function toolProblem(raw: unknown): string | null {
  const size = JSON.stringify(raw)?.length ?? 0;
  if (size > MAX_TOOL_BYTES) return `its definition is ${size} bytes (the cap is ${MAX_TOOL_BYTES})`;
  const parsed = ToolSchema.safeParse(raw);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    return `its definition does not follow MCP (${first ? `${first.path.join('.') || '(root)'}: ${first.message}` : 'invalid'})`;
  }
  if (!parsed.data.name) return 'it has no name';
  return inputSchemaProblem(parsed.data.inputSchema);
}

/** Reports kept per listing; the rest are counted in one more. */
const MAX_REPORTED = 50;

export async function listTools(client: Client): Promise<ToolListing> {
  const tools: Tool[] = [];
  const skipped: SkippedTool[] = [];
  let over = 0;
  let unreported = 0;
  const skip = (s: SkippedTool) => (skipped.length < MAX_REPORTED ? skipped.push(s) : unreported++);
  let cursor: string | undefined;
  let pages = 0;
  do {
    if (pages === MAX_LIST_PAGES) {
      skip({ tool: '*', reason: `the server kept answering nextCursor; the list was read up to ${MAX_LIST_PAGES} pages` });
      break;
    }
    pages++;
    const page = await client.request({ method: 'tools/list', params: cursor ? { cursor } : {} }, LoosePage);
    for (const raw of page.tools) {
      if (tools.length === MAX_TOOLS) {
        over++;
        continue;
      }
      const problem = toolProblem(raw);
      if (problem) skip({ tool: nameOf(raw), reason: problem });
      else tools.push(ToolSchema.parse(raw) as Tool);
    }
    cursor = page.nextCursor;
  } while (cursor);
  if (over) skipped.push({ tool: '*', reason: `the server offers more than ${MAX_TOOLS} tools; ${over} were left out` });
  if (unreported) skipped.push({ tool: '*', reason: `${unreported} more tools were left out` });
  return { tools, skipped };
}
