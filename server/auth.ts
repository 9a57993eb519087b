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

/** The value of one cookie, or undefined. Never throws: a malformed percent-escape is kept as it was sent. */
export function cookieValue(header: string | null, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i <= 0 || part.slice(0, i).trim() !== name) continue;
    const raw = part.slice(i + 1).trim();
    try {
      return decodeURIComponent(raw);
    } catch {
      return raw;
    }
  }
  return undefined;
}

export interface AuthOptions {
  /** The request method (default POST: the strict rule). */
  method?: string;
  /** A top-level page load (the room's server render): the cookie is what a browser navigation carries. */
  navigation?: boolean;
}

/**
 * Whether a cookie-carrying request comes from the room's own origin. Browsers send `Sec-Fetch-Site` and/or
 * `Origin` on cross-origin requests; a page on another port of the same host is same-site but not same-origin.
 */
export function isSameOrigin(headers: Headers): boolean {
  const site = headers.get('sec-fetch-site');
  if (site !== null && site !== 'same-origin' && site !== 'none') return false;
  const origin = headers.get('origin');
  if (origin === null) return true;
  const host = headers.get('x-forwarded-host') ?? headers.get('host');
  if (!host) return false;
  try {
    return new URL(origin).host.toLowerCase() === host.split(',')[0]!.trim().toLowerCase();
  } catch {
    return false;
  }
}

const isJson = (headers: Headers) => /^application\/json\s*(;|$)/i.test(headers.get('content-type') ?? '');

/**
 * True when the request carries the token as a Bearer header, or as the login cookie on a same-origin request
 * (and, for anything but GET/HEAD, with a JSON content type: a cross-site form or text/plain POST cannot send one).
 */
export function isAuthorized(headers: Headers, token: string, o: AuthOptions = {}): boolean {
  const auth = headers.get('authorization');
  if (auth) {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    return !!m && safeEqual(m[1]!.trim(), token);
  }
  const c = cookieValue(headers.get('cookie'), AUTH_COOKIE);
  if (!c || !safeEqual(c, token)) return false;
  if (o.navigation) return true;
  if (!isSameOrigin(headers)) return false;
  const method = (o.method ?? 'POST').toUpperCase();
  return method === 'GET' || method === 'HEAD' || isJson(headers);
}
