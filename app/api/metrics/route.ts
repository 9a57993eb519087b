// GET /api/metrics: Prometheus text format, behind the token.
import { handleMetrics } from '@/server/http/handlers';
import { getRuntime } from '@/server/runtime';

export const dynamic = 'force-dynamic';

export async function GET(req: Request): Promise<Response> {
  return handleMetrics(await getRuntime(), req);
}
