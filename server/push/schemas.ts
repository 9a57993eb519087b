// Params of CONTRACT §3 `push.*` and of a notification's action (zod; JSON-RPC and tRPC share them).
import crypto from 'node:crypto';
import { z } from 'zod';

/** Whether 65 bytes are an uncompressed point on P-256 (0x04, x, y): a key that is not could never be sent to. */
function onP256(s: string): boolean {
  const b = Buffer.from(s.replace(/=+$/, ''), 'base64url');
  if (b.length !== 65 || b[0] !== 4) return false;
  try {
    crypto.createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: b.subarray(1, 33).toString('base64url'), y: b.subarray(33).toString('base64url') }, format: 'jwk' });
    return true;
  } catch {
    return false;
  }
}

/** base64url (padding tolerated, as some browsers send it) decoding to exactly `bytes` bytes. */
const b64url = (bytes: number, what: string) =>
  z
    .string()
    .max(256)
    .regex(/^[A-Za-z0-9_-]+={0,2}$/, `${what} must be base64url`)
    .refine((s) => Buffer.from(s.replace(/=+$/, ''), 'base64url').length === bytes, `${what} must decode to ${bytes} bytes`);

export const pushSubscriptionSchema = z
  .object({
    endpoint: z.string().max(2048).url(),
    /** PushSubscription.toJSON() carries it; crosstalk does not use it. */
    expirationTime: z.number().nullable().optional(),
    keys: z
      .object({
        // Checked on the curve: 0x04 and 64 bytes off it was accepted, and its first push ended dead (probe Q).
        p256dh: b64url(65, 'keys.p256dh').refine(onP256, 'keys.p256dh must be an uncompressed P-256 point'),
        auth: b64url(16, 'keys.auth'),
      })
      .strict(),
  })
  .strict();

export const pushVapidKeyParams = z.object({}).strict();
export const pushSubscribeParams = z.object({ subscription: pushSubscriptionSchema }).strict();
export const pushUnsubscribeParams = z.object({ endpoint: z.string().min(1).max(2048) }).strict();

/** POST /api/push/action: what a service worker sends when a notification's action is chosen. */
export const pushActionParams = z
  .object({
    approvalId: z.string().min(1).max(128),
    token: z.string().min(1).max(128),
    decision: z.enum(['allow_once', 'deny']),
  })
  .strict();

export type PushSubscribeParams = z.infer<typeof pushSubscribeParams>;
export type PushUnsubscribeParams = z.infer<typeof pushUnsubscribeParams>;
