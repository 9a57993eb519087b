// A real Web Push service on 127.0.0.1 for tests, written from the RFCs and node:crypto alone (never the web-push
// library): it checks each request's VAPID JWT (RFC 8292: ES256 over aud/exp/sub, with the server's public key) and
// decrypts the aes128gcm body (RFC 8291 / RFC 8188) with the subscription's private key, as a browser would.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A browser's side of one subscription: its P-256 key pair and auth secret, and what it hands the server. */
export interface FakeBrowser {
  id: string;
  ecdh: crypto.ECDH;
  auth: Buffer;
  subscription: { endpoint: string; keys: { p256dh: string; auth: string } };
}

export interface ReceivedPush {
  browser: string;
  /** The decrypted plaintext, parsed as JSON. */
  json: unknown;
  claims: { aud: string; exp: number; sub: string };
  headers: http.IncomingHttpHeaders;
}

export interface PushReceiver {
  origin: string;
  /** A new subscription at `/push/<id>`. */
  browser(id: string): FakeBrowser;
  /** Answers the next requests to `id` with these statuses, or statuses with headers (then 201s). */
  answer(id: string, ...statuses: Array<number | ForcedAnswer>): void;
  /** Holds the next request to `id` unanswered (`reached` once it is here) until `release()` (then answered as usual). */
  hold(id: string): { reached: Promise<void>; release(): void };
  received: ReceivedPush[];
  /** Requests refused by the checks (a bad JWT, a body that does not decrypt), with why. */
  rejected: Array<{ browser: string; why: string }>;
  /** Every request, whatever it was answered. */
  attempts: Array<{ browser: string; status: number; at: number }>;
  close(): Promise<void>;
}

const b64u = (b: Buffer | Uint8Array) => Buffer.from(b).toString('base64url');

/** A raw uncompressed P-256 point (65 bytes) as a KeyObject, via its JWK coordinates. */
export function p256PublicKey(raw: Buffer): crypto.KeyObject {
  if (raw.length !== 65 || raw[0] !== 4) throw new Error('not an uncompressed P-256 point');
  return crypto.createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: b64u(raw.subarray(1, 33)), y: b64u(raw.subarray(33, 65)) }, format: 'jwk' });
}

/**
 * RFC 8292 §2–3: `Authorization: vapid t=<JWT>, k=<public key>`; the JWT is ES256 (JOSE r||s) over header.payload, with
 * `aud` the push resource's origin, `exp` no more than 24 hours ahead, `sub` a mailto: or https: contact.
 */
export function checkVapid(header: string | undefined, expectedKey: string, audience: string): { aud: string; exp: number; sub: string } {
  const m = /^vapid\s+t=([^,\s]+)\s*,\s*k=([A-Za-z0-9_-]+)$/i.exec(header ?? '');
  if (!m) throw new Error(`Authorization is not "vapid t=…, k=…": ${header}`);
  const [, jwt, k] = m;
  if (k !== expectedKey) throw new Error('k is not the server public key');
  const [h, p, sig] = jwt!.split('.');
  if (!h || !p || !sig) throw new Error('JWT has not three parts');
  const head = JSON.parse(Buffer.from(h, 'base64url').toString()) as { alg?: string; typ?: string };
  if (head.alg !== 'ES256') throw new Error(`JWT alg ${head.alg}`);
  const signature = Buffer.from(sig, 'base64url');
  if (signature.length !== 64) throw new Error('ES256 signature is not 64 bytes');
  const ok = crypto.verify('sha256', Buffer.from(`${h}.${p}`), { key: p256PublicKey(Buffer.from(k!, 'base64url')), dsaEncoding: 'ieee-p1363' }, signature);
  if (!ok) throw new Error('JWT signature does not verify with the server public key');
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as { aud: string; exp: number; sub: string };
  if (claims.aud !== audience) throw new Error(`aud ${claims.aud} is not ${audience}`);
  const now = Math.floor(Date.now() / 1000);
  if (!(claims.exp > now && claims.exp <= now + 24 * 3600)) throw new Error(`exp ${claims.exp} is not within 24 hours`);
  if (!/^(mailto:|https:)/.test(claims.sub ?? '')) throw new Error(`sub ${claims.sub} is not mailto: or https:`);
  return claims;
}

const hkdf = (salt: Buffer, ikm: Buffer, info: Buffer, len: number) => Buffer.from(crypto.hkdfSync('sha256', ikm, salt, info, len));

/**
 * RFC 8291 §3–4 over RFC 8188: header salt(16) | rs(4) | idlen(1) | keyid (the sender's public key, 65 bytes); then
 * IKM = HKDF(auth, ECDH, "WebPush: info\0" | ua_public | as_public, 32), CEK and NONCE from HKDF(salt, IKM, …), one
 * AES-128-GCM record whose plaintext ends with the 0x02 delimiter and zero padding.
 */
export function decryptAes128gcm(body: Buffer, ecdh: crypto.ECDH, auth: Buffer): Buffer {
  if (body.length < 21 + 65 + 17) throw new Error('body too short for aes128gcm');
  const salt = body.subarray(0, 16);
  const rs = body.readUInt32BE(16);
  const idlen = body[20]!;
  if (idlen !== 65) throw new Error(`keyid length ${idlen}, expected 65`);
  const asPublic = body.subarray(21, 21 + idlen);
  const records = body.subarray(21 + idlen);
  if (records.length > rs) throw new Error('more than one record');
  const uaPublic = ecdh.getPublicKey();
  const secret = ecdh.computeSecret(asPublic);
  const ikm = hkdf(auth, secret, Buffer.concat([Buffer.from('WebPush: info\0'), uaPublic, asPublic]), 32);
  const cek = hkdf(salt, ikm, Buffer.from('Content-Encoding: aes128gcm\0'), 16);
  const nonce = hkdf(salt, ikm, Buffer.from('Content-Encoding: nonce\0'), 12);
  const decipher = crypto.createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(records.subarray(records.length - 16));
  const padded = Buffer.concat([decipher.update(records.subarray(0, records.length - 16)), decipher.final()]);
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  if (padded[end] !== 2) throw new Error('last record has no 0x02 delimiter');
  return padded.subarray(0, end);
}

/** A forced answer with headers (a 429's Retry-After). */
export interface ForcedAnswer {
  status: number;
  headers: Record<string, string>;
}

/** `serverKey()`: the VAPID public key requests must be signed with (read at each request). */
export async function startPushReceiver(serverKey: () => string): Promise<PushReceiver> {
  const browsers = new Map<string, FakeBrowser>();
  const queued = new Map<string, Array<number | ForcedAnswer>>();
  const holds = new Map<string, Array<{ arrived(): void; held: Promise<void> }>>();
  const r: PushReceiver = {
    origin: '',
    received: [],
    rejected: [],
    attempts: [],
    browser(id) {
      const ecdh = crypto.createECDH('prime256v1');
      ecdh.generateKeys();
      const auth = crypto.randomBytes(16);
      const b: FakeBrowser = { id, ecdh, auth, subscription: { endpoint: `${r.origin}/push/${id}`, keys: { p256dh: b64u(ecdh.getPublicKey()), auth: b64u(auth) } } };
      browsers.set(id, b);
      return b;
    },
    answer(id, ...statuses) {
      queued.set(id, [...(queued.get(id) ?? []), ...statuses]);
    },
    hold(id) {
      let release = () => undefined as void;
      let arrived = () => undefined as void;
      const held = new Promise<void>((ok) => (release = ok));
      const reached = new Promise<void>((ok) => (arrived = ok));
      holds.set(id, [...(holds.get(id) ?? []), { arrived, held }]);
      return { reached, release: () => release() };
    },
    close: async () => undefined,
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const id = decodeURIComponent((req.url ?? '').replace(/^\/push\//, ''));
      const hold = holds.get(id)?.shift();
      if (hold) {
        hold.arrived();
        await hold.held;
      }
      const reply = (status: number, headers: Record<string, string> = {}) => {
        r.attempts.push({ browser: id, status, at: Date.now() });
        res.writeHead(status, headers).end();
      };
      const b = browsers.get(id);
      if (req.method !== 'POST' || !b) return reply(404);
      const forced = queued.get(id)?.shift();
      if (typeof forced === 'object') return reply(forced.status, forced.headers);
      if (forced !== undefined && forced !== 201) return reply(forced);
      try {
        const claims = checkVapid(req.headers.authorization, serverKey(), r.origin);
        if (req.headers['content-encoding'] !== 'aes128gcm') throw new Error(`Content-Encoding ${req.headers['content-encoding']}`);
        if (!req.headers.ttl) throw new Error('no TTL header (RFC 8030 §5.2)');
        const plain = decryptAes128gcm(Buffer.concat(chunks), b.ecdh, b.auth);
        r.received.push({ browser: id, json: JSON.parse(plain.toString('utf8')), claims, headers: req.headers });
        reply(201);
      } catch (e) {
        r.rejected.push({ browser: id, why: (e as Error).message });
        reply(400);
      }
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  r.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  r.close = () => new Promise((ok) => (server.closeAllConnections(), server.close(() => ok())));
  return r;
}
