// Telegram: sendMessage through grammy's Api; forum topics are `<chatId>:topic:<id>`; inbound webhook checked by its secret token.
import type * as Grammy from 'grammy';
import type { Api } from 'grammy';
import { z } from 'zod';
import { CrosstalkError, errorMessage } from '../../errors';
import { telegramDecision } from '../approval-wire';
import { baseChannelConfig, DeliveryFailure, failureForStatus, safeEqual } from '../delivery';
import { invalidTarget, nonEmpty, stripChannelPrefix } from '../targets';
import type { ChannelPlugin, InboundMessage, Peer, ResolvedTarget } from '../types';

const configSchema = z.object({
  ...baseChannelConfig,
  botToken: z.string().min(1),
  /** The `secret_token` given to setWebhook; Telegram echoes it in X-Telegram-Bot-Api-Secret-Token. */
  webhookSecret: z.string().min(1).optional(),
});
type TelegramConfig = z.infer<typeof configSchema>;

/** A group's peer id, scoped to a forum topic when there is one (matches inbound `message_thread_id`). */
export const telegramGroupPeerId = (chatId: string, topicId?: string) => (topicId ? `${chatId}:topic:${topicId}` : chatId);

export function resolveTelegramTarget(t: { to: string; threadId?: string; replyTo?: string; accountId?: string }): ResolvedTarget {
  const raw = stripChannelPrefix(t.to, ['telegram', 'tg']);
  const m = /^(-?\d+)(?::topic:(\d+))?$/.exec(raw);
  const replyTo = nonEmpty(t.replyTo);
  if (replyTo && !/^\d+$/.test(replyTo)) throw invalidTarget('telegram', t.to, 'replyTo must be a message id');
  const base = { ...(replyTo ? { replyTo } : {}), ...(t.accountId ? { accountId: t.accountId } : {}) };
  if (!m) {
    if (/^@[a-z0-9_]{4,}$/i.test(raw)) return { to: raw, peer: { kind: 'channel', id: raw.slice(1).toLowerCase() }, ...base };
    throw invalidTarget('telegram', t.to, 'expected a chat id (negative for groups), <chatId>:topic:<id> or @channelname');
  }
  const chatId = m[1]!;
  const topic = nonEmpty(t.threadId) ?? m[2];
  if (topic && !/^\d+$/.test(topic)) throw invalidTarget('telegram', t.to, `topic ${topic} is not a number`);
  // Telegram: a negative chat id is a group (or channel), a positive one a private chat.
  const peer: Peer = chatId.startsWith('-') ? { kind: 'group', id: telegramGroupPeerId(chatId, topic) } : { kind: 'direct', id: chatId };
  return { to: chatId, peer, ...(topic ? { threadId: topic } : {}), ...base };
}

/** grammy, loaded with the first delivery (issue 24.5: nothing a first request does not need at start). */
let grammyModule: Promise<typeof Grammy> | undefined;
const grammy = () => (grammyModule ??= import('grammy'));

function classify(e: unknown, { GrammyError, HttpError }: typeof Grammy): DeliveryFailure {
  if (e instanceof GrammyError) {
    const retry = e.parameters.retry_after;
    return failureForStatus(e.error_code, e.description, { retryAfterMs: retry !== undefined ? retry * 1000 : undefined });
  }
  if (e instanceof HttpError) return new DeliveryFailure('network', errorMessage(e.error) || e.message);
  return new DeliveryFailure('network', errorMessage(e));
}

const messageSchema = z.object({
  message_id: z.number(),
  message_thread_id: z.number().optional(),
  is_topic_message: z.boolean().optional(),
  from: z.object({ id: z.number(), is_bot: z.boolean().optional(), first_name: z.string().optional(), username: z.string().optional() }).optional(),
  chat: z.object({ id: z.number(), type: z.string() }),
  text: z.string().optional(),
  caption: z.string().optional(),
});
const updateSchema = z.object({ update_id: z.number(), message: messageSchema.optional(), channel_post: messageSchema.optional() });

export function createTelegramChannel(): ChannelPlugin<TelegramConfig> {
  return {
    id: 'telegram',
    label: 'Telegram',
    maxTextLength: 4_096,
    threadScoping: 'peer',
    configSchema,
    resolveTarget: resolveTelegramTarget,
    async deliver(cfg, req) {
      const sdk = await grammy();
      const api = new sdk.Api(cfg.botToken, { apiRoot: (cfg.apiBaseUrl ?? 'https://api.telegram.org').replace(/\/+$/, ''), timeoutSeconds: Math.ceil(cfg.timeoutMs / 1000) });
      const t = req.target;
      try {
        const msg = await api.sendMessage(
          /^-?\d+$/.test(t.to) ? Number(t.to) : t.to,
          req.text,
          {
            ...(t.threadId ? { message_thread_id: Number(t.threadId) } : {}),
            ...(t.replyTo ? { reply_parameters: { message_id: Number(t.replyTo), allow_sending_without_reply: true } } : {}),
          },
          // grammy types its signal with the abort-controller polyfill; the platform's AbortSignal is what it uses.
          req.signal as Parameters<Api['sendMessage']>[3],
        );
        return { messageId: String(msg.message_id) };
      } catch (e) {
        throw classify(e, sdk);
      }
    },
    inbound(cfg, req) {
      if (!cfg.webhookSecret) throw new CrosstalkError('unauthorized', 'telegram inbound is disabled: no webhookSecret configured');
      if (!safeEqual(req.headers.get('x-telegram-bot-api-secret-token') ?? '', cfg.webhookSecret)) throw new CrosstalkError('unauthorized', 'telegram inbound: bad secret token');
      const body: unknown = JSON.parse(req.rawBody || 'null');
      const decision = telegramDecision(body); // a press on an approval's inline keyboard
      if (decision) return { messages: [], decisions: [decision] };
      const parsed = updateSchema.safeParse(body);
      if (!parsed.success) throw new CrosstalkError('invalid_request', 'telegram inbound: not an Update');
      const u = parsed.data;
      const m = u.message ?? u.channel_post;
      const text = m?.text ?? m?.caption;
      if (!m || !text || m.from?.is_bot) return { messages: [] };
      const chatId = String(m.chat.id);
      const topic = m.is_topic_message && m.message_thread_id !== undefined ? String(m.message_thread_id) : undefined;
      const peer: Peer = m.chat.type === 'private' ? { kind: 'direct', id: chatId } : { kind: 'group', id: telegramGroupPeerId(chatId, topic) };
      const msg: InboundMessage = {
        from: String(m.from?.id ?? chatId),
        ...(m.from?.username || m.from?.first_name ? { senderName: m.from.username ?? m.from.first_name } : {}),
        peer,
        text,
        messageId: String(m.message_id),
        dedupeId: `telegram:${u.update_id}`,
        replyTarget: { to: chatId, ...(topic ? { threadId: topic } : {}) },
      };
      return { messages: [msg] };
    },
  };
}
