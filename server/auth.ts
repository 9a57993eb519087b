// The API token rule of CONTRACT §1 (env token, else one generated on first start and kept in the data dir), and the
// constant-time compare and HMAC that tokens and signatures share.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export const AUTH_COOKIE = 'crosstalk_token';

export function resolveToken(envToken: string | undefined, dataDir: string): { token: string; generated: boolean } {
  if (envToken) return { token: envToken, generated: false };
  const file = path.join(/* turbopackIgnore: true */ dataDir, 'token');
  try {
    const existing = fs.readFileSync(/* turbopackIgnore: true */ file, 'utf8').trim();
    if (existing) return { token: existing, generated: false };
  } catch {
    /* first start */
  }
  fs.mkdirSync(/* turbopackIgnore: true */ dataDir, { recursive: true });
  const token = crypto.randomBytes(24).toString('base64url');
  fs.writeFileSync(/* turbopackIgnore: true */ file, token + '\n', { mode: 0o600 });
  return { token, generated: true };
}

/** Hex HMAC-SHA256 of a body: webhook signatures out, channel signatures in. */
export const hmacHex = (secret: string, body: string) => crypto.createHmac('sha256', secret).update(body).digest('hex');

/** Constant-time string comparison for tokens and signatures. */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && crypto.timingSafeEqual(ab, bb);
}

function cookieValue(header: string | null, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return decodeURIComponent(part.slice(i + 1).trim());
  }
  return undefined;
}

/** True when the request carries the token as a Bearer header or as the login cookie. */
export function isAuthorized(headers: Headers, token: string): boolean {
  const auth = headers.get('authorization');
  if (auth) {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    return !!m && safeEqual(m[1]!.trim(), token);
  }
  const c = cookieValue(headers.get('cookie'), AUTH_COOKIE);
  return !!c && safeEqual(c, token);
}
