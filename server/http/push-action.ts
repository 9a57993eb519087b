// POST /api/push/action: a notification's "Allow once" / "Deny", sent by the service worker with the item's one-time
// token (no bearer token: the push carried the only credential this route accepts, for that one approval).
import { isCrosstalkError } from '../errors';
import { zodIssues } from '../gateway/jsonrpc';
import { pushActionParams } from '../push/schemas';
import type { FullRuntime } from '../runtime-types';
import { readCapped } from './handlers';

const MAX_ACTION_BYTES = 4096;

const json = (body: unknown, status: number) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store' } });
const refusal = (code: string, message: string, status: number, issues?: unknown) => json({ status: 'error', error: { code, message, ...(issues ? { issues } : {}) } }, status);

const STATUS: Record<string, number> = { forbidden: 403, already_resolved: 409, unknown_approval: 404, invalid_request: 400 };

export async function handlePushAction(rt: FullRuntime, req: Request): Promise<Response> {
  const body = await readCapped(req, MAX_ACTION_BYTES);
  if (body === null) return refusal('payload_too_large', `body larger than ${MAX_ACTION_BYTES} bytes`, 413);
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch {
    return refusal('invalid_request', 'body is not JSON', 400);
  }
  const parsed = pushActionParams.safeParse(raw);
  if (!parsed.success) return refusal('invalid_request', 'invalid params', 400, zodIssues(parsed.error));
  try {
    return json(await rt.push.act(parsed.data.approvalId, parsed.data.token, parsed.data.decision), 200);
  } catch (e) {
    if (isCrosstalkError(e)) return refusal(e.code, e.message, STATUS[e.code] ?? 400);
    rt.log.error({ err: e }, 'push action failed');
    return refusal('internal', 'internal error', 500);
  }
}
