// Mattermost: posts over REST v4 (DMs through /channels/direct; `@user` targets lose the @); inbound outgoing webhooks checked by token.
import { z } from 'zod';
import { CrosstalkError } from '../../errors';
import { apiUrl, baseChannelConfig, httpJson, parseRetryAfter, safeEqual, type HttpJsonRequest } from '../delivery';
import { invalidTarget, nonEmpty, stripChannelPrefix, typedTarget } from '../targets';
import type { ChannelPlugin, ResolvedTarget } from '../types';

const configSchema = z.object({
  ...baseChannelConfig,
  botToken: z.string().min(1),
  /** The bot's user id (asked of /users/me when missing), needed to open DMs. */
  botUserId: z.string().optional(),
  /** The token of the outgoing webhook that posts to crosstalk. */
  outgoingToken: z.string().min(1).optional(),
});
type MattermostConfig = z.infer<typeof configSchema>;

export function resolveMattermostTarget(t: { to: string; threadId?: string; replyTo?: string; accountId?: string }): ResolvedTarget {
  const raw = stripChannelPrefix(t.to, ['mattermost']);
  const typed = typedTarget(raw, ['user', 'channel']);
  const threadId = nonEmpty(t.threadId) ?? nonEmpty(t.replyTo);
  const extra = { ...(threadId ? { threadId, sessionThreadId: threadId } : {}), ...(t.accountId ? { accountId: t.accountId } : {}) };
  if (raw.startsWith('@')) {
    // `@alice` and `user:alice` are one DM peer: the @ is not part of the name.
    const name = raw.slice(1).trim().toLowerCase();
    if (!/^[a-z0-9._-]+$/.test(name)) throw invalidTarget('mattermost', t.to, 'bad username');
    return { to: `@${name}`, peer: { kind: 'direct', id: name }, ...extra };
  }
  if (typed?.type === 'user') return { to: `user:${typed.id}`, peer: { kind: 'direct', id: typed.id.replace(/^@/, '') }, ...extra };
  const id = typed?.id ?? raw;
  if (!/^[a-z0-9]{26}$/i.test(id)) throw invalidTarget('mattermost', t.to, 'expected a channel id (26 characters), @username or user:<id>');
  return { to: id, peer: { kind: 'channel', id }, ...extra };
}

const describe = (b: unknown) => {
  const e = b as { id?: string; message?: string } | null;
  return e && typeof e === 'object' && e.message ? `${e.id ?? 'error'}: ${e.message}` : undefined;
};

const outgoingSchema = z.object({
  token: z.string(),
  channel_id: z.string().min(1),
  user_id: z.string().min(1),
  user_name: z.string().optional(),
  post_id: z.string().optional(),
  text: z.string(),
});

export function createMattermostChannel(): ChannelPlugin<MattermostConfig> {
  return {
    id: 'mattermost',
    label: 'Mattermost',
    maxTextLength: 16_383,
    threadScoping: 'suffix',
    configSchema,
    resolveTarget: resolveMattermostTarget,
    async deliver(cfg, req) {
      if (!cfg.apiBaseUrl) throw new CrosstalkError('channel_error', 'mattermost needs the server url (config.channels.mattermost.apiBaseUrl)');
      const call = (path: string, o: Partial<HttpJsonRequest> = {}) =>
        httpJson({
          url: apiUrl(cfg.apiBaseUrl!, path),
          headers: { authorization: `Bearer ${cfg.botToken}` },
          timeoutMs: cfg.timeoutMs,
          signal: req.signal,
          describe,
          // Mattermost's limiter says when to come back in X-Ratelimit-Reset (seconds) next to Retry-After.
          retryAfterFromHeaders: (h) => parseRetryAfter(h.get('x-ratelimit-reset')),
          ...o,
        });
      const t = req.target;
      let channelId = t.to;
      if (t.peer.kind === 'direct') {
        const userId = t.to.startsWith('@')
          ? ((await call(`/api/v4/users/username/${encodeURIComponent(t.peer.id)}`, { method: 'GET' })).body as { id: string }).id
          : t.to.slice('user:'.length);
        const me = cfg.botUserId ?? ((await call('/api/v4/users/me', { method: 'GET' })).body as { id: string }).id;
        channelId = ((await call('/api/v4/channels/direct', { body: [me, userId] })).body as { id: string }).id;
      }
      const res = await call('/api/v4/posts', { body: { channel_id: channelId, message: mattermostQuiet(req.text), ...(t.threadId ? { root_id: t.threadId } : {}) } });
      return { messageId: (res.body as { id: string }).id };
    },
    inbound(cfg, req) {
      if (!cfg.outgoingToken) throw new CrosstalkError('unauthorized', 'mattermost inbound is disabled: no outgoingToken configured');
      const ct = req.headers.get('content-type') ?? '';
      const raw = ct.includes('application/json') ? JSON.parse(req.rawBody || 'null') : Object.fromEntries(new URLSearchParams(req.rawBody));
      const token = (raw as { token?: unknown } | null)?.token;
      if (typeof token !== 'string' || !safeEqual(token, cfg.outgoingToken)) throw new CrosstalkError('unauthorized', 'mattermost inbound: bad token');
      const parsed = outgoingSchema.safeParse(raw);
      if (!parsed.success) throw new CrosstalkError('invalid_request', 'mattermost inbound: not an outgoing webhook payload');
      const p = parsed.data;
      if (!p.text.trim()) return { messages: [], response: { body: {} } };
      return {
        messages: [
          {
            from: p.user_id,
            ...(p.user_name ? { senderName: p.user_name } : {}),
            peer: { kind: 'channel', id: p.channel_id },
            text: p.text,
            ...(p.post_id ? { messageId: p.post_id, dedupeId: `mattermost:${p.post_id}` } : {}),
            replyTarget: { to: p.channel_id },
          },
        ],
        // An empty object: Mattermost posts nothing itself, the agent's reply comes through the API.
        response: { body: {} },
      };
    },
  };
}

/**
 * Text with Mattermost's channel-wide mentions (`@all`, `@channel`, `@here`) made plain words: a word joiner after the @
 * looks the same and matches no mention. As written, an echo or a model's answer a sender steered notified everyone in
 * the channel with the bot's rights (Mattermost has no per-post allowed-mentions like Discord's).
 */
export const mattermostQuiet = (text: string) => text.replace(/@(all|channel|here)\b/gi, '@\u2060$1');
