// Signed webhooks (CONTRACT §5), both directions: `X-Crosstalk-Timestamp: <unix seconds>` and `X-Crosstalk-Signature: sha256=<hex HMAC of "<timestamp>.<body>">`.
import { hmacHex, safeEqual } from '../auth';

export const SIGNATURE_HEADER = 'X-Crosstalk-Signature';
export const TIMESTAMP_HEADER = 'X-Crosstalk-Timestamp';
/** A signed request older than this (or this far in the future) is refused: a captured one cannot be replayed later. */
export const MAX_AGE_S = 5 * 60;

/** The two headers that sign `body` at `nowMs`. */
export function signWebhook(secret: string, body: string, nowMs = Date.now()): Record<string, string> {
  const ts = String(Math.floor(nowMs / 1000));
  return { [TIMESTAMP_HEADER]: ts, [SIGNATURE_HEADER]: `sha256=${hmacHex(secret, `${ts}.${body}`)}` };
}

/** Why a signed request is refused, or null when its signature and timestamp hold. */
export function webhookRefusal(secret: string, headers: { get(name: string): string | null }, body: string, nowMs = Date.now()): string | null {
  const ts = headers.get(TIMESTAMP_HEADER)?.trim() ?? '';
  const sig = headers.get(SIGNATURE_HEADER)?.trim().toLowerCase() ?? '';
  if (!ts || !sig) return `missing ${!ts ? TIMESTAMP_HEADER : SIGNATURE_HEADER}`;
  if (!/^\d{1,12}$/.test(ts)) return `${TIMESTAMP_HEADER} is not unix seconds`;
  if (Math.abs(nowMs / 1000 - Number(ts)) > MAX_AGE_S) return `${TIMESTAMP_HEADER} is more than 5 minutes away from now`;
  if (!safeEqual(sig, `sha256=${hmacHex(secret, `${ts}.${body}`)}`)) return `bad ${SIGNATURE_HEADER}`;
  return null;
}
