// The tRPC endpoint's limits, shared by Next's route: the same 1 MiB body cap as the gateway, and a batch cap.
import { MAX_BODY_BYTES, readCapped } from './handlers';

/** Calls per tRPC batch (the room's client batch link uses the same number). */
export const TRPC_MAX_BATCH = 20;

/** The request with its body read under the cap, or a 413 answer in tRPC's error shape. */
export async function limitTrpcRequest(req: Request): Promise<Request | Response> {
  if (req.method === 'GET' || req.method === 'HEAD') return req;
  const body = await readCapped(req, MAX_BODY_BYTES);
  if (body === null) {
    return Response.json(
      { error: { message: 'request body larger than 1 MiB', code: -32600, data: { code: 'payload_too_large', httpStatus: 413 } } },
      { status: 413, headers: { 'cache-control': 'no-store' } },
    );
  }
  return new Request(req.url, { method: req.method, headers: req.headers, body, signal: req.signal });
}
