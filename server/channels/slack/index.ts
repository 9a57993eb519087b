// Slack: chat.postMessage through @slack/web-api; Events API inbound checked with the signing secret (v0 signature + timestamp).
import type * as SlackWebApi from '@slack/web-api';
import type { Logger } from '@slack/web-api';
import { z } from 'zod';
import { CrosstalkError, errorMessage } from '../../errors';
import { slackDecision } from '../approval-wire';
import { baseChannelConfig, DeliveryFailure, failureForStatus, hmacHex, safeEqual } from '../delivery';
import { invalidTarget, nonEmpty, stripChannelPrefix, typedTarget } from '../targets';
import type { ChannelPlugin, InboundMessage, Peer, ResolvedTarget } from '../types';

const configSchema = z.object({
  ...baseChannelConfig,
  botToken: z.string().min(1),
  signingSecret: z.string().min(1).optional(),
});
type SlackConfig = z.infer<typeof configSchema>;

/** @slack/web-api, loaded with the first delivery (issue 24.5: nothing a first request does not need at start). */
let slackModule: Promise<typeof SlackWebApi> | undefined;
const slackWebApi = () => (slackModule ??= import('@slack/web-api'));

/** The client's logger, silenced (its `getLevel` answers the SDK's LogLevel.ERROR, the string 'error'). */
const silentSlackLogger: Logger = { debug() {}, info() {}, warn() {}, error() {}, setLevel() {}, getLevel: () => 'error' as SlackWebApi.LogLevel, setName() {} };
const silent = silentSlackLogger;

const AUTH_ERRORS = new Set(['invalid_auth', 'not_authed', 'account_inactive', 'token_revoked', 'token_expired', 'no_permission', 'missing_scope']);

/** Slack `message` subtypes that are still a person's message to answer. */
const USER_SUBTYPES = new Set(['thread_broadcast', 'file_share']);

/** The conversation kind a Slack id denotes: D… an IM, G… a private group, anything else a channel. */
function peerForChannelId(id: string): Peer {
  const up = id.toUpperCase();
  if (up.startsWith('G')) return { kind: 'group', id: up };
  return { kind: 'channel', id: up };
}

/** Slack ids are upper case; keys lowercase them, so `c0abc` and `C0ABC` are one channel. */
export function resolveSlackTarget(t: { to: string; threadId?: string; replyTo?: string; accountId?: string }): ResolvedTarget {
  const raw = stripChannelPrefix(t.to, ['slack']);
  const typed = typedTarget(raw, ['user', 'channel']);
  let peer: Peer;
  let to: string;
  if (typed?.type === 'user' || raw.startsWith('@') || /^[UW][A-Z0-9]{2,}$/i.test(raw)) {
    const id = (typed?.id ?? raw.replace(/^@/, '')).toUpperCase();
    peer = { kind: 'direct', id };
    to = id; // chat.postMessage with a user id posts into the app's DM with that user
  } else {
    const id = (typed?.id ?? raw.replace(/^#/, '')).trim();
    if (!id || /\s/.test(id)) throw invalidTarget('slack', t.to, 'use a channel id (C…), user:<U…> or #channel');
    // `#general` names a channel, whatever letters it has; a bare word of letters and digits is an id (C…, G…, D…).
    // (Before, `#general` was taken for an id, sent as GENERAL, which Slack does not know, and keyed as a group.)
    const named = !typed && raw.startsWith('#');
    const isId = !named && /^[A-Z0-9]+$/i.test(id);
    peer = isId ? peerForChannelId(id) : { kind: 'channel', id: id.toLowerCase() };
    if (isId && /^D[A-Z0-9]+$/i.test(id)) peer = { kind: 'direct', id: id.toUpperCase() };
    to = isId ? id.toUpperCase() : `#${id.toLowerCase()}`;
  }
  // A reply to a message starts (or continues) the thread under it: both scope the session alike.
  const threadId = nonEmpty(t.threadId) ?? nonEmpty(t.replyTo);
  return { to, peer, ...(threadId ? { threadId, sessionThreadId: threadId } : {}), ...(t.accountId ? { accountId: t.accountId } : {}) };
}

function classify(e: unknown, { ErrorCode }: typeof SlackWebApi): DeliveryFailure {
  const err = e as { code?: string; retryAfter?: number; statusCode?: number; statusMessage?: string; body?: unknown; data?: { error?: string } };
  switch (err.code) {
    case ErrorCode.RateLimitedError:
      return new DeliveryFailure('rate_limited', 'Slack answered 429', { status: 429, retryAfterMs: (err.retryAfter ?? 1) * 1000 });
    case ErrorCode.HTTPError:
      return failureForStatus(err.statusCode ?? 0, `${err.statusCode} ${err.statusMessage ?? ''}`.trim());
    case ErrorCode.PlatformError: {
      const code = err.data?.error ?? 'unknown_error';
      if (AUTH_ERRORS.has(code)) return new DeliveryFailure('auth', code);
      if (code === 'ratelimited') return new DeliveryFailure('rate_limited', code);
      return new DeliveryFailure('client', code);
    }
    default:
      return new DeliveryFailure('network', errorMessage(e));
  }
}

const eventSchema = z
  .object({
    type: z.string(),
    subtype: z.string().optional(),
    user: z.string().optional(),
    bot_id: z.string().optional(),
    text: z.string().optional(),
    channel: z.string().optional(),
    channel_type: z.string().optional(),
    ts: z.string().optional(),
    thread_ts: z.string().optional(),
  })
  .passthrough();
const envelopeSchema = z.object({
  type: z.string(),
  challenge: z.string().optional(),
  event_id: z.string().optional(),
  team_id: z.string().optional(),
  event: eventSchema.optional(),
});

/** Slack's request signing: `v0=` HMAC-SHA256 of `v0:<timestamp>:<body>`, within five minutes. */
export function verifySlackSignature(secret: string | undefined, headers: Headers, rawBody: string, now: number): void {
  if (!secret) throw new CrosstalkError('unauthorized', 'slack inbound is disabled: no signingSecret configured');
  const ts = headers.get('x-slack-request-timestamp') ?? '';
  const sig = headers.get('x-slack-signature') ?? '';
  if (!/^\d+$/.test(ts) || Math.abs(now / 1000 - Number(ts)) > 300) throw new CrosstalkError('unauthorized', 'slack inbound: stale or missing X-Slack-Request-Timestamp');
  if (!safeEqual(sig, `v0=${hmacHex(secret, `v0:${ts}:${rawBody}`)}`)) throw new CrosstalkError('unauthorized', 'slack inbound: bad X-Slack-Signature');
}

export function createSlackChannel(): ChannelPlugin<SlackConfig> {
  return {
    id: 'slack',
    label: 'Slack',
    maxTextLength: 40_000,
    threadScoping: 'suffix',
    configSchema,
    resolveTarget: resolveSlackTarget,
    async deliver(cfg, req) {
      const sdk = await slackWebApi();
      const client = new sdk.WebClient(cfg.botToken, {
        slackApiUrl: cfg.apiBaseUrl ?? 'https://slack.com/api/',
        // One retry policy for every channel lives in delivery.ts: the client must not retry on its own.
        retryConfig: { retries: 0 },
        rejectRateLimitedCalls: true,
        timeout: cfg.timeoutMs,
        logger: silent,
      });
      try {
        const res = await client.chat.postMessage({ channel: req.target.to, text: slackEscape(req.text), ...(req.target.threadId ? { thread_ts: req.target.threadId } : {}) });
        return { messageId: String(res.ts ?? '') };
      } catch (e) {
        throw classify(e, sdk);
      }
    },
    inbound(cfg, req) {
      verifySlackSignature(cfg.signingSecret, req.headers, req.rawBody, req.now);
      if (req.rawBody.startsWith('payload=')) {
        // Interactivity (form-encoded, signed alike): a press on an approval's buttons.
        const decision = slackDecision(req.rawBody);
        return { messages: [], ...(decision ? { decisions: [decision] } : {}) };
      }
      const env = envelopeSchema.safeParse(JSON.parse(req.rawBody || 'null'));
      if (!env.success) throw new CrosstalkError('invalid_request', 'slack inbound: not an Events API payload');
      const b = env.data;
      if (b.type === 'url_verification') return { messages: [], response: { body: { challenge: b.challenge ?? '' } } };
      const ev = b.event;
      if (b.type !== 'event_callback' || !ev || (ev.type !== 'message' && ev.type !== 'app_mention')) return { messages: [] };
      // Edits, joins and bot posts (our own replies included) are not messages to answer; a thread reply also sent to
      // the channel (thread_broadcast) and a message with a file (file_share) are a person's words.
      if ((ev.subtype && !USER_SUBTYPES.has(ev.subtype)) || ev.bot_id || !ev.user || !ev.channel || !ev.text) return { messages: [] };
      const peer: Peer = ev.channel_type === 'im' ? { kind: 'direct', id: ev.user.toUpperCase() } : peerForChannelId(ev.channel);
      const msg: InboundMessage = {
        from: ev.user,
        peer,
        ...(ev.thread_ts ? { sessionThreadId: ev.thread_ts } : {}),
        text: ev.text,
        ...(ev.ts ? { messageId: ev.ts } : {}),
        // message and app_mention both fire for one mention: de-duplicate on the message, not the event.
        dedupeId: `slack:${ev.channel.toUpperCase()}:${ev.ts ?? b.event_id}`,
        replyTarget: { to: ev.channel.toUpperCase(), ...(ev.thread_ts ? { threadId: ev.thread_ts } : {}) },
      };
      return { messages: [msg] };
    },
  };
}

/**
 * Text as Slack reads it: `&`, `<` and `>` escaped, as its API asks. Unescaped, `<!channel>` or `<!here>` in text a
 * sender can steer (an echo, a model's answer) broadcast to the whole channel, and `a < b` was mangled.
 */
export const slackEscape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
