// BlueBubbles (iMessage): text through the server's REST API; `chat_*` target prefixes are stripped so keys match inbound chats.
import { z } from 'zod';
import { CrosstalkError } from '../../errors';
import { apiUrl, baseChannelConfig, httpJson } from '../delivery';
import { invalidTarget, nonEmpty, stripChannelPrefix } from '../targets';
import type { ChannelPlugin, ResolvedTarget } from '../types';

const configSchema = z.object({
  ...baseChannelConfig,
  password: z.string().min(1),
  /** `apple-script` (default) or `private-api` (needed for replies). */
  method: z.enum(['apple-script', 'private-api']).default('apple-script'),
});
type BlueBubblesConfig = z.infer<typeof configSchema>;

const HANDLE = /^(\+?\d{5,15}|[^\s@]+@[^\s@]+\.[^\s@]+)$/;

/**
 * `chat_guid:iMessage;+;chat123`, `chat_identifier:chat123` and `chat_id:chat123` name one group chat `chat123`;
 * a phone number or email (or `iMessage;-;<handle>`) is a direct chat with that handle.
 */
export function resolveBlueBubblesTarget(t: { to: string; replyTo?: string; accountId?: string }): ResolvedTarget {
  let raw = stripChannelPrefix(t.to, ['bluebubbles', 'imessage']);
  const prefixed = /^chat_(guid|identifier|id):(.+)$/i.exec(raw);
  if (prefixed) raw = prefixed[2]!.trim();
  const replyTo = nonEmpty(t.replyTo);
  const extra = { ...(replyTo ? { replyTo } : {}), ...(t.accountId ? { accountId: t.accountId } : {}) };
  const guid = /^([A-Za-z]+);([+-]);(.+)$/.exec(raw);
  if (guid) {
    const id = guid[3]!;
    if (guid[2] === '-') return { to: raw, peer: { kind: 'direct', id: id.toLowerCase() }, ...extra };
    return { to: raw, peer: { kind: 'group', id }, ...extra };
  }
  if (prefixed) return { to: `iMessage;+;${raw}`, peer: { kind: 'group', id: raw }, ...extra };
  const handle = raw.replace(/[\s().-]/g, (c) => (raw.includes('@') ? c : ''));
  if (!HANDLE.test(handle)) throw invalidTarget('bluebubbles', t.to, 'expected a phone number, an email, or chat_guid:/chat_identifier:/chat_id:');
  return { to: `iMessage;-;${handle}`, peer: { kind: 'direct', id: handle.toLowerCase() }, ...extra };
}

const describe = (b: unknown) => {
  const e = b as { message?: string; error?: { type?: string; message?: string } } | null;
  if (!e || typeof e !== 'object') return undefined;
  return e.error?.message ? `${e.error.type ?? 'error'}: ${e.error.message}` : e.message;
};

export function createBlueBubblesChannel(): ChannelPlugin<BlueBubblesConfig> {
  return {
    id: 'bluebubbles',
    label: 'BlueBubbles',
    threadScoping: 'none',
    configSchema,
    resolveTarget: resolveBlueBubblesTarget,
    async deliver(cfg, req) {
      if (!cfg.apiBaseUrl) throw new CrosstalkError('channel_error', 'bluebubbles needs the server url (config.channels.bluebubbles.apiBaseUrl)');
      const t = req.target;
      const res = await httpJson({
        url: `${apiUrl(cfg.apiBaseUrl, '/api/v1/message/text')}?password=${encodeURIComponent(cfg.password)}`,
        body: {
          chatGuid: t.to,
          tempGuid: req.idempotencyKey,
          message: req.text,
          method: t.replyTo ? 'private-api' : cfg.method,
          ...(t.replyTo ? { selectedMessageGuid: t.replyTo, partIndex: 0 } : {}),
        },
        timeoutMs: cfg.timeoutMs,
        signal: req.signal,
        describe,
      });
      const b = res.body as { data?: { guid?: string } } | null;
      return { messageId: b?.data?.guid ?? req.idempotencyKey };
    },
  };
}
