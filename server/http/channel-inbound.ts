// POST /api/channels/<channel>: platform webhooks. No bearer token (platforms cannot send one): each channel checks its own signature.
import type { FullRuntime } from '../boot';
import { createChannels, type ChannelService } from '../channels';

const MAX_INBOUND_BYTES = 1024 * 1024;

const lazy = new WeakMap<FullRuntime, ChannelService>();

/** The runtime's channel service; built and started here until the runtime carries one (`rt.channels`). */
export function channelsOf(rt: FullRuntime): ChannelService {
  const own = (rt as FullRuntime & { channels?: ChannelService }).channels;
  if (own) return own;
  let svc = lazy.get(rt);
  if (!svc) {
    svc = createChannels({ config: rt.config, store: rt.store, bus: rt.bus, orchestrator: rt.orchestrator, log: rt.log });
    svc.start();
    lazy.set(rt, svc);
  }
  return svc;
}

const json = (body: unknown, status: number) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store' } });

async function readCapped(req: Request): Promise<string | null> {
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > MAX_INBOUND_BYTES) return null;
  if (!req.body) return '';
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_INBOUND_BYTES) {
      await reader.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function handleChannelInbound(rt: FullRuntime, channel: string, req: Request): Promise<Response> {
  if (!/^[a-z0-9-]{1,64}$/i.test(channel)) return json({ ok: false, error: { code: 'unknown_channel', message: 'unknown channel' } }, 404);
  // The raw bytes are what the platforms sign: read them once, before any parsing.
  const rawBody = await readCapped(req);
  if (rawBody === null) return json({ ok: false, error: { code: 'payload_too_large', message: 'request body larger than 1 MiB' } }, 413);
  const out = await channelsOf(rt).handleInbound(channel, { headers: req.headers, rawBody, url: new URL(req.url), now: Date.now() });
  return json(out.body, out.status);
}
