// POST /api/channels/<channel>: platform webhooks. No bearer token (platforms cannot send one): each channel checks its own signature.
import type { FullRuntime } from '../runtime-types';
import type { ChannelService } from '../channels';
import { readCapped } from './handlers';
import { bodyTooDeep, TOO_DEEP_MESSAGE } from './json-depth';

const MAX_INBOUND_BYTES = 1024 * 1024;

/** The `<channel>` of a `/api/channels/<channel>[/…]` path, URL-decoded (an undecodable one is refused by the handler's name check). */
export function channelOf(pathname: string): string {
  const raw = pathname.slice('/api/channels/'.length).split('/')[0] ?? '';
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** The runtime's channel service. */
export const channelsOf = (rt: FullRuntime): ChannelService => rt.channels;

const json = (body: unknown, status: number) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store' } });

export async function handleChannelInbound(rt: FullRuntime, channel: string, req: Request): Promise<Response> {
  if (!/^[a-z0-9-]{1,64}$/i.test(channel)) return json({ ok: false, error: { code: 'unknown_channel', message: 'unknown channel' } }, 404);
  // The raw bytes are what the platforms sign: read them once, before any parsing.
  const rawBody = await readCapped(req, MAX_INBOUND_BYTES);
  if (rawBody === null) return json({ ok: false, error: { code: 'payload_too_large', message: 'request body larger than 1 MiB' } }, 413);
  // Before any channel parses it: a payload nested past 64 levels is refused (a JSON body, or a form's JSON values).
  if (bodyTooDeep(rawBody)) return json({ ok: false, error: { code: 'invalid_request', message: TOO_DEEP_MESSAGE } }, 400);
  const out = await channelsOf(rt).handleInbound(channel, { headers: req.headers, rawBody, url: new URL(req.url), now: Date.now() });
  return json(out.body, out.status);
}
