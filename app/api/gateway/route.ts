// POST /api/gateway: JSON-RPC 2.0 (thin adapter over server/http).
import { handleGatewayPost } from '@/server/http/handlers';
import { getRuntime } from '@/server/runtime';

export const dynamic = 'force-dynamic';

export async function POST(req: Request): Promise<Response> {
  return handleGatewayPost(await getRuntime(), req);
}
