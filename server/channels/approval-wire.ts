// Approvals in chat, per platform: the request with buttons (Telegram inline keyboard, Slack block actions, Discord components), its edit, and the button press parsed from the platform's own payload.
import type { Logger, LogLevel } from '@slack/web-api';
import { z } from 'zod';
import type { Decision, ElicitDecision } from '../events/types';

/** A button press on an approval request, as the platform reported it (after its signature check). */
export interface ChatDecision {
  approvalId: string;
  decision: Decision | ElicitDecision;
  /** An elicitation's button: the index of the choice pressed (server/channels/elicitation-chat.ts). */
  choice?: number;
  /** Sender id in the platform's spelling (what `allowFrom` lists). */
  from: string;
  senderName?: string;
  /** The conversation the button was pressed in (platform spelling). */
  chatId: string;
  /** What the platform needs to answer the presser privately (callback query id, Slack user, Discord token). */
  ack: Record<string, string>;
}

/** Where a request was posted: enough to edit it later. */
export interface PostedRequest {
  channel: string;
  to: string;
  threadId?: string;
  accountId?: string;
  messageId: string;
}

export interface ApprovalWire {
  /** `buttons`: an elicitation's own (default: the three decisions). */
  post(cfg: WireConfig, to: { to: string; threadId?: string }, text: string, approvalId: string, buttons?: WireButton[]): Promise<string>;
  /** Replaces the request with `text` and removes its buttons. */
  settle(cfg: WireConfig, posted: PostedRequest, text: string): Promise<void>;
  /** Tells the presser only (refusals, "already decided"). */
  notify(cfg: WireConfig, d: ChatDecision, text: string): Promise<void>;
  /** The bot's direct conversation with a user (where an approver's card goes), as `post` takes it and a press reports it. */
  dm(cfg: WireConfig, userId: string): Promise<string>;
}

export interface WireConfig {
  botToken: string;
  apiBaseUrl?: string;
  timeoutMs: number;
}

export const BUTTONS: Array<{ decision: Decision; label: string; code: string }> = [
  { decision: 'allow_once', label: 'Allow once', code: 'a1' },
  { decision: 'allow_always', label: 'Allow always', code: 'aa' },
  { decision: 'deny', label: 'Deny', code: 'd' },
];
/** A button on a chat request: its label and code (`a1`, `aa`, `d`; an elicitation's `e<n>` choice or `ex` decline). */
export interface WireButton {
  label: string;
  code: string;
  decision?: Decision;
}
const byCode = new Map<string, Decision | ElicitDecision>([...BUTTONS.map((b) => [b.code, b.decision] as const), ['ex', 'decline']]);
const CODE = '(a1|aa|d|e[0-9]|ex)';
/** The decision (and an elicitation's choice) a button code stands for. */
function ofCode(code: string): { decision: Decision | ElicitDecision; choice?: number } {
  return /^e[0-9]$/.test(code) ? { decision: 'accept', choice: Number(code.slice(1)) } : { decision: byCode.get(code)! };
}

/** `ct:<code>:<approvalId>`: Telegram callback_data (≤ 64 bytes), Discord custom_id. */
export const buttonData = (code: string, approvalId: string) => `ct:${code}:${approvalId}`;
export function parseButtonData(data: string): { approvalId: string; decision: Decision | ElicitDecision; choice?: number } | null {
  const m = new RegExp(`^ct:${CODE}:(apr_[A-Za-z0-9_]+)$`).exec(data);
  return m ? { ...ofCode(m[1]!), approvalId: m[2]! } : null;
}

// ── Telegram ──────────────────────────────────────────────────────────

// The platforms' SDKs load with the first approval sent there (issue 24.5: nothing a first request does not need at start).
const sdks: { grammy?: Promise<typeof import('grammy')>; slack?: Promise<typeof import('@slack/web-api')>; discord?: Promise<typeof import('@discordjs/rest')> } = {};
const tgApi = async (cfg: WireConfig) => new (await (sdks.grammy ??= import('grammy'))).Api(cfg.botToken, { apiRoot: (cfg.apiBaseUrl ?? 'https://api.telegram.org').replace(/\/+$/, ''), timeoutSeconds: Math.ceil(cfg.timeoutMs / 1000) });
const tgChat = (to: string) => (/^-?\d+$/.test(to) ? Number(to) : to);

const telegram: ApprovalWire = {
  async post(cfg, t, text, approvalId, buttons: WireButton[] = BUTTONS) {
    const msg = await (await tgApi(cfg)).sendMessage(tgChat(t.to), text, {
      ...(t.threadId ? { message_thread_id: Number(t.threadId) } : {}),
      reply_markup: { inline_keyboard: [buttons.map((b) => ({ text: b.label, callback_data: buttonData(b.code, approvalId) }))] },
    });
    return String(msg.message_id);
  },
  async settle(cfg, p, text) {
    // Without reply_markup the inline keyboard goes away.
    await (await tgApi(cfg)).editMessageText(tgChat(p.to), Number(p.messageId), text);
  },
  async notify(cfg, d, text) {
    if (d.ack.callbackQueryId) await (await tgApi(cfg)).answerCallbackQuery(d.ack.callbackQueryId, { text, show_alert: false });
  },
  // A private chat's id is the user's id (the user must have started the bot once).
  async dm(_cfg, userId) {
    return userId;
  },
};

const callbackQuerySchema = z.object({
  id: z.string(),
  from: z.object({ id: z.number(), username: z.string().optional(), first_name: z.string().optional() }),
  message: z.object({ message_id: z.number(), chat: z.object({ id: z.number() }) }).optional(),
  data: z.string().optional(),
});

/** A Telegram Update carrying a `callback_query` from one of our keyboards; null for any other update. */
export function telegramDecision(update: unknown): ChatDecision | null {
  const q = callbackQuerySchema.safeParse((update as { callback_query?: unknown } | null)?.callback_query);
  if (!q.success || !q.data.message || !q.data.data) return null;
  const b = parseButtonData(q.data.data);
  if (!b) return null;
  const name = q.data.from.username ?? q.data.from.first_name;
  return { ...b, from: String(q.data.from.id), ...(name ? { senderName: name } : {}), chatId: String(q.data.message.chat.id), ack: { callbackQueryId: q.data.id } };
}

// ── Slack ─────────────────────────────────────────────────────────────

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, setLevel() {}, getLevel: () => 'error' as LogLevel, setName() {} };
const slackClient = async (cfg: WireConfig) =>
  new (await (sdks.slack ??= import('@slack/web-api'))).WebClient(cfg.botToken, { slackApiUrl: cfg.apiBaseUrl ?? 'https://slack.com/api/', retryConfig: { retries: 0 }, rejectRateLimitedCalls: true, timeout: cfg.timeoutMs, logger: silent });
const SLACK_ACTION = new RegExp(`^ct_approval_${CODE}$`);

const slack: ApprovalWire = {
  async post(cfg, t, text, approvalId, buttons: WireButton[] = BUTTONS) {
    const res = await (await slackClient(cfg)).chat.postMessage({
      channel: t.to,
      text,
      ...(t.threadId ? { thread_ts: t.threadId } : {}),
      blocks: [
        { type: 'section', text: { type: 'plain_text', text } },
        {
          type: 'actions',
          block_id: `ct_approval_${approvalId}`,
          elements: buttons.map((b) => ({
            type: 'button' as const,
            action_id: `ct_approval_${b.code}`,
            value: approvalId,
            text: { type: 'plain_text' as const, text: b.label },
            ...(b.decision === 'deny' ? { style: 'danger' as const } : b.decision === 'allow_once' ? { style: 'primary' as const } : {}),
          })),
        },
      ],
    });
    return String(res.ts ?? '');
  },
  async settle(cfg, p, text) {
    await (await slackClient(cfg)).chat.update({ channel: p.to, ts: p.messageId, text, blocks: [{ type: 'section', text: { type: 'plain_text', text } }] });
  },
  async notify(cfg, d, text) {
    await (await slackClient(cfg)).chat.postEphemeral({ channel: d.chatId, user: d.from, text });
  },
  async dm(cfg, userId) {
    const res = await (await slackClient(cfg)).conversations.open({ users: userId });
    if (!res.channel?.id) throw new Error(`Slack opened no conversation with ${userId}`);
    return res.channel.id.toUpperCase();
  },
};

const blockActionsSchema = z.object({
  type: z.literal('block_actions'),
  user: z.object({ id: z.string(), username: z.string().optional(), name: z.string().optional() }),
  channel: z.object({ id: z.string() }).optional(),
  container: z.object({ channel_id: z.string().optional() }).passthrough().optional(),
  actions: z.array(z.object({ action_id: z.string(), value: z.string().optional() }).passthrough()),
});

/**
 * A Slack interactivity request (`application/x-www-form-urlencoded`, `payload=<json>`) whose
 * block_actions press one of our buttons; null for anything else. The signature was checked on the raw body.
 */
export function slackDecision(rawBody: string): ChatDecision | null {
  const payload = new URLSearchParams(rawBody).get('payload');
  if (!payload) return null;
  const p = blockActionsSchema.safeParse(JSON.parse(payload));
  if (!p.success) return null;
  const chatId = p.data.channel?.id ?? p.data.container?.channel_id;
  for (const a of p.data.actions) {
    const m = SLACK_ACTION.exec(a.action_id);
    if (!m || !a.value || !chatId) continue;
    const name = p.data.user.username ?? p.data.user.name;
    return { approvalId: a.value, ...ofCode(m[1]!), from: p.data.user.id, ...(name ? { senderName: name } : {}), chatId: chatId.toUpperCase(), ack: {} };
  }
  return null;
}

// ── Discord ───────────────────────────────────────────────────────────

const discordRest = async (cfg: WireConfig) =>
  new (await (sdks.discord ??= import('@discordjs/rest'))).REST({ api: cfg.apiBaseUrl ?? 'https://discord.com/api', version: '10', retries: 0, timeout: cfg.timeoutMs, rejectOnRateLimit: () => true, hashSweepInterval: 0, handlerSweepInterval: 0 }).setToken(cfg.botToken);
const discordChannel = (to: string) => to.replace(/^channel:/, '');

const discord: ApprovalWire = {
  async post(cfg, t, text, approvalId, buttons: WireButton[] = BUTTONS) {
    const styles: Record<Decision, number> = { allow_once: 3, allow_always: 1, deny: 4 }; // success, primary, danger
    const body = { content: text, components: [{ type: 1, components: buttons.map((b) => ({ type: 2, style: b.decision ? styles[b.decision] : 2, label: b.label, custom_id: buttonData(b.code, approvalId) })) }] };
    const msg = (await (await discordRest(cfg)).post(`/channels/${discordChannel(t.to)}/messages`, { body })) as { id: string };
    return msg.id;
  },
  async settle(cfg, p, text) {
    await (await discordRest(cfg)).patch(`/channels/${discordChannel(p.to)}/messages/${p.messageId}`, { body: { content: text, components: [] } });
  },
  async notify(cfg, d, text) {
    // The interaction was acknowledged in the HTTP answer; a private follow-up goes through its webhook.
    if (d.ack.applicationId && d.ack.token) await (await discordRest(cfg)).post(`/webhooks/${d.ack.applicationId}/${d.ack.token}`, { body: { content: text, flags: 64 }, auth: false });
  },
  async dm(cfg, userId) {
    const ch = (await (await discordRest(cfg)).post('/users/@me/channels', { body: { recipient_id: userId } })) as { id: string };
    return ch.id;
  },
};

const componentSchema = z.object({
  type: z.literal(3),
  application_id: z.string().optional(),
  token: z.string().optional(),
  channel_id: z.string(),
  member: z.object({ user: z.object({ id: z.string(), username: z.string().optional() }) }).optional(),
  user: z.object({ id: z.string(), username: z.string().optional() }).optional(),
  data: z.object({ custom_id: z.string() }).passthrough(),
});

/** A MESSAGE_COMPONENT interaction (type 3) on one of our buttons; null otherwise. */
export function discordDecision(interaction: unknown): ChatDecision | null {
  const it = componentSchema.safeParse(interaction);
  if (!it.success) return null;
  const b = parseButtonData(it.data.data.custom_id);
  const user = it.data.member?.user ?? it.data.user;
  if (!b || !user) return null;
  return {
    ...b,
    from: user.id,
    ...(user.username ? { senderName: user.username } : {}),
    chatId: it.data.channel_id,
    ack: { ...(it.data.application_id ? { applicationId: it.data.application_id } : {}), ...(it.data.token ? { token: it.data.token } : {}) },
  };
}

export const APPROVAL_WIRES: Record<string, ApprovalWire> = { telegram, slack, discord };

/** The conversation id a posted request lives in, in the spelling a button press reports. */
export function chatIdOf(channel: string, to: string): string {
  if (channel === 'discord') return discordChannel(to);
  if (channel === 'slack') return to.toUpperCase();
  return to;
}
