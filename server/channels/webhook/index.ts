// The generic webhook channel: outbound JSON POST to a configured URL (signed, idempotent), inbound POST checked by HMAC.
import { z } from 'zod';
import { CrosstalkError } from '../../errors';
import { SIGNATURE_HEADER, signWebhook, webhookRefusal } from '../../webhooks/signature';
import { baseChannelConfig, httpJson } from '../delivery';
import { invalidTarget, nonEmpty, stripChannelPrefix, typedTarget } from '../targets';
import type { ChannelPlugin, ChatType, DeliveryRequest, DeliveryResult, InboundRequest, ResolvedTarget } from '../types';


const configSchema = z.object({
  ...baseChannelConfig,
  /** Where outbound messages are POSTed. */
  url: z.string().url().optional(),
  /** Signs outbound bodies and verifies inbound ones: `X-Crosstalk-Timestamp` and `X-Crosstalk-Signature: sha256=<hex HMAC of "<ts>.<body>">`. */
  secret: z.string().min(1).optional(),
});
export type WebhookConfig = z.infer<typeof configSchema>;

/** `user:<id>` (or a bare id) is a direct chat; `group:<id>` and `channel:<id>` are conversations. */
export function resolveGenericTarget(channel: string, t: { to: string; threadId?: string; replyTo?: string; accountId?: string }): ResolvedTarget {
  const raw = stripChannelPrefix(t.to, [channel]);
  const typed = typedTarget(raw, ['user', 'group', 'channel']);
  const kind: ChatType = typed ? (typed.type === 'user' ? 'direct' : (typed.type as ChatType)) : 'direct';
  const id = typed?.id ?? raw;
  if (!id || /\s/.test(id)) throw invalidTarget(channel, t.to, 'use user:<id>, group:<id> or channel:<id>');
  const threadId = nonEmpty(t.threadId);
  const replyTo = nonEmpty(t.replyTo);
  return {
    to: kind === 'direct' ? `user:${id}` : `${kind}:${id}`,
    peer: { kind, id },
    ...(threadId ? { threadId, sessionThreadId: threadId } : {}),
    ...(replyTo ? { replyTo } : {}),
    ...(t.accountId ? { accountId: t.accountId } : {}),
  };
}

/**
 * The Idempotency-Key header's value: the key itself when it is printable ASCII, else percent-encoded (UTF-8). A header
 * holds bytes 0-255 only: a keyed `send` whose key had a character above U+00FF failed every attempt ("Cannot convert
 * argument to a ByteString"), retried as a network failure, and ended dead. The body's `id` is the key as given.
 */
export const idempotencyHeader = (key: string) => (/^[\x21-\x7e]*$/.test(key) ? key : encodeURIComponent(key));

/** POSTs `{id, channel, to, chatType, text, threadId?, replyTo?, ts}`; the Idempotency-Key makes a retry harmless. */
export async function postSignedJson(channel: string, cfg: { url?: string; secret?: string; timeoutMs: number }, req: DeliveryRequest): Promise<DeliveryResult> {
  if (!cfg.url) throw new CrosstalkError('channel_error', `${channel} has no outbound url (config.channels.${channel}.url)`);
  const t = req.target;
  const body = JSON.stringify({
    id: req.idempotencyKey,
    channel,
    to: t.to,
    chatType: t.peer.kind,
    text: req.text,
    ...(t.threadId ? { threadId: t.threadId } : {}),
    ...(t.replyTo ? { replyTo: t.replyTo } : {}),
    ...(t.accountId ? { accountId: t.accountId } : {}),
    ts: new Date().toISOString(),
  });
  const res = await httpJson({
    url: cfg.url,
    body,
    headers: {
      'content-type': 'application/json',
      'idempotency-key': idempotencyHeader(req.idempotencyKey),
      ...(cfg.secret ? signWebhook(cfg.secret, body) : {}),
    },
    timeoutMs: cfg.timeoutMs,
    signal: req.signal,
    safeToRetry: true,
  });
  const b = res.body as { messageId?: unknown; id?: unknown } | null;
  const id = b && typeof b === 'object' ? (b.messageId ?? b.id) : undefined;
  return { messageId: typeof id === 'string' || typeof id === 'number' ? String(id) : req.idempotencyKey };
}

const inboundSchema = z.object({
  from: z.string().min(1).max(256),
  text: z.string().min(1).max(256 * 1024),
  senderName: z.string().max(256).optional(),
  chatType: z.enum(['direct', 'group', 'channel']).default('direct'),
  conversationId: z.string().min(1).max(256).optional(),
  threadId: z.string().min(1).max(256).optional(),
  messageId: z.string().min(1).max(256).optional(),
  accountId: z.string().min(1).max(128).optional(),
});

/** The signed-webhook check (CONTRACT §5): signature over "<timestamp>.<body>", timestamp within 5 minutes; else `unauthorized` (401). */
export function verifyHmac(secret: string | undefined, req: Pick<InboundRequest, 'headers' | 'rawBody' | 'now'>, channel: string): void {
  if (!secret) throw new CrosstalkError('unauthorized', `${channel} inbound is disabled: no secret configured`);
  const refused = webhookRefusal(secret, req.headers, req.rawBody, req.now);
  if (refused) throw new CrosstalkError('unauthorized', `${channel} inbound: ${refused}`);
}

export function createWebhookChannel(): ChannelPlugin<WebhookConfig> {
  return {
    id: 'webhook',
    label: 'webhook',
    threadScoping: 'suffix',
    configSchema,
    resolveTarget: (t) => resolveGenericTarget('webhook', t),
    deliver: (cfg, req) => postSignedJson('webhook', cfg, req),
    inbound(cfg, req) {
      verifyHmac(cfg.secret, req, 'webhook');
      const parsed = inboundSchema.safeParse(JSON.parse(req.rawBody || 'null'));
      if (!parsed.success) throw new CrosstalkError('invalid_request', `webhook inbound: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
      const m = parsed.data;
      if (m.chatType !== 'direct' && !m.conversationId) throw new CrosstalkError('invalid_request', 'webhook inbound: conversationId is required for group and channel messages');
      // An account not configured is refused here, before any run: its reply could never be delivered (the run was
      // spent, and the sender never heard back; the failure was a log line only).
      if (m.accountId && m.accountId !== 'default' && !cfg.accounts?.[m.accountId]) {
        throw new CrosstalkError('invalid_request', `webhook inbound: accountId ${JSON.stringify(m.accountId)} is not configured (config.channels.webhook.accounts)`);
      }
      const peer = m.chatType === 'direct' ? { kind: 'direct' as const, id: m.from } : { kind: m.chatType, id: m.conversationId! };
      // A messageId is unique within its account and conversation (the sender's, for a direct chat), not across them:
      // two senders' messages with one id were one turn (the second dropped with 200).
      const scope = JSON.stringify([m.accountId ?? 'default', peer.kind, peer.id, m.messageId]);
      return {
        messages: [
          {
            from: m.from,
            ...(m.senderName ? { senderName: m.senderName } : {}),
            peer,
            ...(m.threadId ? { sessionThreadId: m.threadId } : {}),
            text: m.text,
            ...(m.accountId ? { accountId: m.accountId } : {}),
            // Without a messageId the signature names the request (it covers the timestamp and the body): the same
            // signed request sent again inside its 5 minutes — a retry, or a captured one replayed — runs once.
            ...(m.messageId ? { messageId: m.messageId, dedupeId: `webhook:${scope}` } : { dedupeId: `webhook-sig:${req.headers.get(SIGNATURE_HEADER)?.trim().toLowerCase()}` }),
            replyTarget: { to: peer.kind === 'direct' ? `user:${peer.id}` : `${peer.kind}:${peer.id}`, ...(m.threadId ? { threadId: m.threadId } : {}) },
          },
        ],
      };
    },
  };
}
