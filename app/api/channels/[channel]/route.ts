// POST /api/channels/<channel>: inbound platform webhooks (thin adapter over server/http/channel-inbound).
import { handleChannelInbound } from '@/server/http/channel-inbound';
import { getRuntime } from '@/server/runtime';

export const dynamic = 'force-dynamic';

export async function POST(req: Request, { params }: { params: Promise<{ channel: string }> }): Promise<Response> {
  const { channel } = await params;
  return handleChannelInbound(await getRuntime(), channel, req);
}
