// POST /api/push/action: a notification's action with its one-time token (thin adapter over server/http/push-action).
import { handlePushAction } from '@/server/http/push-action';
import { getRuntime } from '@/server/runtime';

export const dynamic = 'force-dynamic';

export async function POST(req: Request): Promise<Response> {
  return handlePushAction(await getRuntime(), req);
}
