// GET /api/gateway/events: agent events as Server-Sent Events with Last-Event-ID replay.
import { handleEvents } from '@/server/http/handlers';
import { getRuntime } from '@/server/runtime';

export const dynamic = 'force-dynamic';

export async function GET(req: Request): Promise<Response> {
  return handleEvents(await getRuntime(), req);
}
