// POST /a2a/<agentId>: A2A JSON-RPC (v1.0 and v0.3 names), bearer token (thin adapter over server/a2a).
import { handleA2ARpc } from '@/server/a2a/http';
import { getRuntime } from '@/server/runtime';

export const dynamic = 'force-dynamic';

export async function POST(req: Request, ctx: { params: Promise<{ agentId: string }> }): Promise<Response> {
  return handleA2ARpc(await getRuntime(), (await ctx.params).agentId, req);
}
