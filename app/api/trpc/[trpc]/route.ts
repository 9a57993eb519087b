// The tRPC HTTP endpoint under Next (`next dev`; `npm start` answers /api/trpc before Next, on the same handler).
import { handleTrpc } from '@/server/http/trpc';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const handler = (req: Request) => handleTrpc(req);
export { handler as GET, handler as POST };
