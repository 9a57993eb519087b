// GET /api/mcp/oauth/callback: an MCP server's OAuth redirect back to crosstalk (thin adapter over server/mcp/oauth-callback).
import { handleOAuthCallback } from '@/server/mcp/oauth-callback';
import { getRuntime } from '@/server/runtime';

export const dynamic = 'force-dynamic';

export async function GET(req: Request): Promise<Response> {
  return handleOAuthCallback((await getRuntime()).mcp, req);
}
