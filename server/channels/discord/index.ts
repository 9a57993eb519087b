// Discord: messages through @discordjs/rest (threads are channels, so the thread id is the peer); inbound via signed interactions or a relay.
import crypto from 'node:crypto';
import type * as DiscordRest from '@discordjs/rest';
import { z } from 'zod';
import { CrosstalkError, errorMessage } from '../../errors';
import { discordDecision } from '../approval-wire';
import { baseChannelConfig, DeliveryFailure, failureForStatus, safeEqual } from '../delivery';
import { invalidTarget, nonEmpty, stripChannelPrefix, typedTarget } from '../targets';
import type { ChannelPlugin, InboundMessage, InboundRequest, InboundResult, ResolvedTarget } from '../types';
import { MAX_AGE_S } from '../../webhooks/signature';
import { verifyHmac } from '../webhook';

const configSchema = z.object({
  ...baseChannelConfig,
  botToken: z.string().min(1),
  /** The application's Ed25519 public key (hex), for the interactions endpoint. */
  publicKey: z.string().regex(/^[0-9a-f]{64}$/i).optional(),
  /** Shared secret of a gateway relay that forwards MESSAGE_CREATE events, signed like the webhook channel. */
  relaySecret: z.string().min(1).optional(),
});
type DiscordConfig = z.infer<typeof configSchema>;

const SNOWFLAKE = /^\d{5,25}$/;

export function resolveDiscordTarget(t: { to: string; threadId?: string; replyTo?: string; accountId?: string }): ResolvedTarget {
  const raw = stripChannelPrefix(t.to, ['discord']);
  const mention = /^<(@!?|#)(\d+)>$/.exec(raw);
  const typed = typedTarget(raw, ['user', 'channel']);
  const isUser = typed?.type === 'user' || mention?.[1]?.startsWith('@') || raw.startsWith('@');
  const id = mention?.[2] ?? typed?.id ?? raw.replace(/^[@#]/, '');
  if (!SNOWFLAKE.test(id)) throw invalidTarget('discord', t.to, 'expected a channel id, user:<id> or a <@id>/<#id> mention');
  const threadId = nonEmpty(t.threadId);
  const replyTo = nonEmpty(t.replyTo);
  if (threadId && !SNOWFLAKE.test(threadId)) throw invalidTarget('discord', t.to, `threadId ${threadId} is not a channel id`);
  const base = { ...(replyTo ? { replyTo } : {}), ...(t.accountId ? { accountId: t.accountId } : {}) };
  if (isUser) return { to: `user:${id}`, peer: { kind: 'direct', id }, ...base };
  // A Discord thread is a channel of its own: inbound messages in it carry the thread's id, so the thread is the peer.
  const channelId = threadId ?? id;
  return { to: channelId, peer: { kind: 'channel', id: channelId }, ...(threadId ? { threadId } : {}), ...base };
}

/** The Discord REST client, loaded with the first delivery (issue 24.5: nothing a first request does not need at start). */
let restModule: Promise<typeof DiscordRest> | undefined;
const discordRest = () => (restModule ??= import('@discordjs/rest'));

function classify(e: unknown, { DiscordAPIError, HTTPError, RateLimitError }: typeof DiscordRest): DeliveryFailure {
  if (e instanceof RateLimitError) return new DeliveryFailure('rate_limited', `rate limited on ${e.route}`, { status: 429, retryAfterMs: e.retryAfter || e.timeToReset });
  if (e instanceof DiscordAPIError) return failureForStatus(e.status, `${e.code}: ${e.message}`);
  if (e instanceof HTTPError) return failureForStatus(e.status, e.message);
  return new DeliveryFailure('network', errorMessage(e));
}

const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** Discord's interactions signature: Ed25519 over `timestamp + body` with the application's public key; the timestamp within 5 minutes of now (no replay). */
export function verifyDiscordInteraction(publicKeyHex: string | undefined, headers: Headers, rawBody: string, nowMs = Date.now()): void {
  if (!publicKeyHex) throw new CrosstalkError('unauthorized', 'discord interactions are disabled: no publicKey configured');
  const sig = headers.get('x-signature-ed25519') ?? '';
  const ts = headers.get('x-signature-timestamp') ?? '';
  if (!/^[0-9a-f]{128}$/i.test(sig) || !ts) throw new CrosstalkError('unauthorized', 'discord inbound: missing signature headers');
  const key = crypto.createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(publicKeyHex, 'hex')]), format: 'der', type: 'spki' });
  if (!crypto.verify(null, Buffer.from(ts + rawBody), key, Buffer.from(sig, 'hex'))) throw new CrosstalkError('unauthorized', 'discord inbound: bad signature');
  if (!/^\d{1,12}$/.test(ts) || Math.abs(nowMs / 1000 - Number(ts)) > MAX_AGE_S) throw new CrosstalkError('unauthorized', 'discord inbound: X-Signature-Timestamp is more than 5 minutes away from now');
}

const interactionSchema = z.object({
  type: z.number(),
  id: z.string().optional(),
  channel_id: z.string().optional(),
  guild_id: z.string().optional(),
  member: z.object({ user: z.object({ id: z.string(), username: z.string().optional() }) }).optional(),
  user: z.object({ id: z.string(), username: z.string().optional() }).optional(),
  data: z.object({ name: z.string().optional(), options: z.array(z.object({ name: z.string(), type: z.number(), value: z.unknown() })).optional() }).optional(),
});

const relayMessageSchema = z.object({
  id: z.string(),
  channel_id: z.string(),
  guild_id: z.string().optional(),
  content: z.string(),
  author: z.object({ id: z.string(), username: z.string().optional(), bot: z.boolean().optional() }),
});

function fromInteraction(rawBody: string): InboundResult & { response: { body: unknown } } {
  const body: unknown = JSON.parse(rawBody || 'null');
  // A press on an approval's buttons: acknowledged as DEFERRED_UPDATE_MESSAGE; the message is edited once decided.
  const decision = discordDecision(body);
  if (decision) return { messages: [], decisions: [decision], response: { body: { type: 6 } } };
  const parsed = interactionSchema.safeParse(body);
  if (!parsed.success) throw new CrosstalkError('invalid_request', 'discord inbound: not an interaction');
  const it = parsed.data;
  if (it.type === 1) return { messages: [], response: { body: { type: 1 } } }; // PING → PONG
  const user = it.member?.user ?? it.user;
  const text = it.data?.options?.find((o) => o.type === 3 && typeof o.value === 'string')?.value as string | undefined;
  if (it.type !== 2 || !user || !it.channel_id || !text) return { messages: [], response: { body: { type: 4, data: { content: 'Nothing to send.', flags: 64 } } } };
  const msg: InboundMessage = {
    from: user.id,
    ...(user.username ? { senderName: user.username } : {}),
    peer: it.guild_id ? { kind: 'channel', id: it.channel_id } : { kind: 'direct', id: user.id },
    text,
    ...(it.id ? { messageId: it.id, dedupeId: `discord:interaction:${it.id}` } : {}),
    replyTarget: { to: `channel:${it.channel_id}` },
  };
  // Acknowledge privately; the agent's reply arrives as a channel message.
  return { messages: [msg], response: { body: { type: 4, data: { content: 'Received.', flags: 64 } } } };
}

function fromRelay(cfg: DiscordConfig, req: InboundRequest): { messages: InboundMessage[] } {
  verifyHmac(cfg.relaySecret, req, 'discord relay');
  const body = JSON.parse(req.rawBody || 'null') as { t?: string; d?: unknown } | null;
  const parsed = relayMessageSchema.safeParse(body && typeof body === 'object' && 'd' in body ? body.d : body);
  if (!parsed.success) throw new CrosstalkError('invalid_request', 'discord relay: expected a MESSAGE_CREATE payload');
  const m = parsed.data;
  if (m.author.bot || !m.content.trim()) return { messages: [] };
  return {
    messages: [
      {
        from: m.author.id,
        ...(m.author.username ? { senderName: m.author.username } : {}),
        // In a guild the channel (or thread channel) is the conversation; outside one it is a DM.
        peer: m.guild_id ? { kind: 'channel', id: m.channel_id } : { kind: 'direct', id: m.author.id },
        text: m.content,
        messageId: m.id,
        dedupeId: `discord:${m.id}`,
        replyTarget: { to: `channel:${m.channel_id}` },
      },
    ],
  };
}

export function createDiscordChannel(): ChannelPlugin<DiscordConfig> {
  return {
    id: 'discord',
    label: 'Discord',
    maxTextLength: 2_000,
    threadScoping: 'peer',
    configSchema,
    resolveTarget: resolveDiscordTarget,
    async deliver(cfg, req) {
      const sdk = await discordRest();
      const rest = new sdk.REST({
        api: cfg.apiBaseUrl ?? 'https://discord.com/api',
        version: '10',
        retries: 0,
        timeout: cfg.timeoutMs,
        // Hand 429s to the shared retry policy instead of queueing inside the client.
        rejectOnRateLimit: () => true,
        hashSweepInterval: 0,
        handlerSweepInterval: 0,
      }).setToken(cfg.botToken);
      try {
        let channelId = req.target.to;
        if (channelId.startsWith('user:')) {
          const dm = (await rest.post('/users/@me/channels', { body: { recipient_id: req.target.peer.id }, signal: req.signal })) as { id: string };
          channelId = dm.id;
        }
        // Mentions ping users only: text a sender can steer (an echo, a model's answer) must not ping @everyone,
        // @here or a role through the bot's permissions.
        const body: Record<string, unknown> = { content: req.text, allowed_mentions: { parse: ['users'] } };
        if (req.target.replyTo) body.message_reference = { message_id: req.target.replyTo, fail_if_not_exists: false };
        const msg = (await rest.post(`/channels/${channelId}/messages`, { body, signal: req.signal })) as { id: string };
        return { messageId: msg.id };
      } catch (e) {
        throw classify(e, sdk);
      }
    },
    inbound(cfg, req) {
      if (req.headers.get('x-signature-ed25519')) {
        verifyDiscordInteraction(cfg.publicKey, req.headers, req.rawBody, req.now);
        return fromInteraction(req.rawBody);
      }
      return fromRelay(cfg, req);
    },
  };
}
