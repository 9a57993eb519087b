// GET /api/health: readiness probe (no data, no auth); answers once the runtime is up.
import { getRuntime } from '@/server/runtime';

export const dynamic = 'force-dynamic';

export async function GET(): Promise<Response> {
  await getRuntime();
  return Response.json({ status: 'ok' });
}
