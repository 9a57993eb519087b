// The tRPC HTTP endpoint under Next (`next dev`; `npm start` answers /api/trpc before Next, on the same handler).
import { handleTrpc } from '@/server/http/trpc';
import { getRuntime } from '@/server/runtime';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const handler = async (req: Request) => handleTrpc(req, await getRuntime());
export { handler as GET, handler as POST };
