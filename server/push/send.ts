// One Web Push attempt: the web-push library encrypts (RFC 8291 aes128gcm) and signs (RFC 8292 VAPID); the POST goes
// through the webhook SSRF guard (no private or loopback address unless webhooks.allowPrivateNetwork, no redirects).
import webpush from 'web-push';
import { fetch as undiciFetch } from 'undici';
import { checkWebhookUrl, guardedDispatcher } from '../webhooks/guard';
import type { VapidKeys } from './keys';
import { parseRetryAfter } from '../channels/delivery';

export interface PushTarget {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export type PushOutcome =
  | { ok: true; status: number }
  /** `gone`: the push service answered 404 or 410, the subscription is dead (drop it); otherwise worth a retry unless `refused`. */
  | { ok: false; status?: number; gone: boolean; refused?: boolean; error: string; code?: string; retryAfterMs?: number };

/** The longest Retry-After a push waits for (its message lives an hour at the push service anyway: TTL). */
export const MAX_RETRY_AFTER_MS = 3_600_000;

export interface PushSendOptions {
  vapid: VapidKeys;
  subject: string;
  allowPrivateNetwork: boolean;
  timeoutMs: number;
  /** Seconds the push service may hold the message for an offline browser. */
  ttl?: number;
  /**
   * RFC 8030 §5.4 Topic (at most 32 base64url characters): a message still held by the push service for an offline
   * browser is replaced by a newer one with the same topic (an item's "resolved" push replaces its approval push).
   */
  topic?: string;
  dispatcher?: ReturnType<typeof guardedDispatcher>;
}

export async function sendPush(target: PushTarget, payload: string, o: PushSendOptions): Promise<PushOutcome> {
  const refused = await checkWebhookUrl(target.endpoint, o.allowPrivateNetwork);
  if (refused) return { ok: false, gone: false, refused: true, code: 'forbidden', error: refused.replace(/^webhook/, 'push endpoint') };
  let details: ReturnType<typeof webpush.generateRequestDetails>;
  try {
    details = webpush.generateRequestDetails(target, payload, {
      vapidDetails: { subject: o.subject, publicKey: o.vapid.publicKey, privateKey: o.vapid.privateKey },
      contentEncoding: 'aes128gcm',
      TTL: o.ttl ?? 3600,
      urgency: 'high',
      ...(o.topic ? { topic: o.topic } : {}),
    });
  } catch (e) {
    // A subscription whose keys do not make a valid P-256 point or auth secret can never be sent to.
    return { ok: false, gone: true, refused: true, error: `push subscription unusable: ${(e as Error).message}` };
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(details.headers)) headers[k] = String(v);
  delete headers['Content-Length']; // fetch sets it from the body
  try {
    const res = await undiciFetch(details.endpoint, {
      method: 'POST',
      headers,
      body: details.body ? new Uint8Array(details.body) : null,
      redirect: 'manual',
      signal: AbortSignal.timeout(o.timeoutMs),
      dispatcher: o.dispatcher ?? guardedDispatcher(o.allowPrivateNetwork),
    });
    const text = await res.text().catch(() => '');
    if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status };
    const gone = res.status === 404 || res.status === 410;
    // 429 (RFC 8030 §8.4) and 503 may say when to come back: the retry waits at least that long (probe Q: it came
    // after the webhook backoff alone, 0.5 s after a Retry-After of 5 s).
    const after = res.status === 429 || res.status === 503 ? parseRetryAfter(res.headers.get('retry-after')) : undefined;
    return {
      ok: false,
      status: res.status,
      gone,
      error: `push service answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`,
      ...(after !== undefined ? { retryAfterMs: Math.min(after, MAX_RETRY_AFTER_MS) } : {}),
    };
  } catch (e) {
    const err = e as Error & { cause?: { code?: string; message?: string } };
    if (err.cause?.code === 'EPRIVATEADDR') return { ok: false, gone: false, refused: true, code: 'forbidden', error: err.cause.message ?? 'push endpoint resolved to a private address' };
    return { ok: false, gone: false, error: `push failed: ${err.cause?.message ?? err.message}` };
  }
}
