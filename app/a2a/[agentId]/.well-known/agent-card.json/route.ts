// GET /a2a/<agentId>/.well-known/agent-card.json: the agent's A2A card, no token (thin adapter over server/a2a).
import { handleAgentCard } from '@/server/a2a/http';
import { getRuntime } from '@/server/runtime';

export const dynamic = 'force-dynamic';

export async function GET(req: Request, ctx: { params: Promise<{ agentId: string }> }): Promise<Response> {
  return handleAgentCard(await getRuntime(), (await ctx.params).agentId, req);
}
