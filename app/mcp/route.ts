// /mcp: crosstalk as an MCP server (thin adapter over server/mcp-server; `npm start` answers it before Next).
import { handleMcp } from '@/server/mcp-server/http';
import { getRuntime } from '@/server/runtime';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const handler = async (req: Request) => handleMcp(await getRuntime(), req);
export { handler as DELETE, handler as GET, handler as POST };
