// GET /login?token=… — trades the API token for the http-only login cookie, then redirects to the room (thin adapter over server/http/login).
import { handleLogin } from '@/server/http/login';
import { getRuntime } from '@/server/runtime';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

export async function GET(req: Request): Promise<Response> {
  return handleLogin(req, (await getRuntime()).token);
}
