// The tRPC endpoint's limits, shared by Next's route: the same 1 MiB body cap and JSON depth limit as the gateway, and a batch cap.
import { MAX_BODY_BYTES, readCapped } from './handlers';
import { jsonTooDeep, TOO_DEEP_MESSAGE } from './json-depth';

/** Calls per tRPC batch (the room's client batch link uses the same number). */
export const TRPC_MAX_BATCH = 20;

/** A refusal in tRPC's own error shape (its `code` the JSON-RPC one tRPC uses, `data.code` ours, CONTRACT §6). */
const refusal = (status: number, message: string, code: 'payload_too_large' | 'invalid_request') =>
  Response.json({ error: { message, code: -32600, data: { code, httpStatus: status } } }, { status, headers: { 'cache-control': 'no-store' } });

/**
 * The request with its body read under the cap, or a refusal: 413 past 1 MiB, 400 (tRPC's invalid request) when the
 * input nests deeper than 64 levels — checked on the text, before tRPC's parser and zod walk it.
 */
export async function limitTrpcRequest(req: Request): Promise<Request | Response> {
  const url = new URL(req.url);
  // A batch wraps each call's input in {"0": …}: one level more than the input itself.
  const envelope = url.searchParams.get('batch') === '1' ? 1 : 0;
  if (req.method === 'GET' || req.method === 'HEAD') {
    const input = url.searchParams.get('input');
    return input !== null && jsonTooDeep(input, envelope) ? refusal(400, TOO_DEEP_MESSAGE, 'invalid_request') : req;
  }
  const body = await readCapped(req, MAX_BODY_BYTES);
  if (body === null) return refusal(413, 'request body larger than 1 MiB', 'payload_too_large');
  if (jsonTooDeep(body, envelope)) return refusal(400, TOO_DEEP_MESSAGE, 'invalid_request');
  return new Request(req.url, { method: req.method, headers: req.headers, body, signal: req.signal });
}
