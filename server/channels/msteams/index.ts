// Microsoft Teams: Bot Framework Connector activities, with an app token from the client-credentials flow; threads are reply chains.
import { z } from 'zod';
import { CrosstalkError } from '../../errors';
import { apiUrl, baseChannelConfig, httpJson } from '../delivery';
import { invalidTarget, nonEmpty, stripChannelPrefix, typedTarget } from '../targets';
import type { ChannelPlugin, ChatType, ResolvedTarget } from '../types';

const configSchema = z.object({
  ...baseChannelConfig,
  appId: z.string().min(1),
  appPassword: z.string().min(1),
  tenantId: z.string().optional(),
  /** The token endpoint (default: Bot Framework's on login.microsoftonline.com). */
  tokenUrl: z.string().url().optional(),
});
type TeamsConfig = z.infer<typeof configSchema>;

function kindOf(conversationId: string): ChatType {
  if (/@thread\.(tacv2|skype)/i.test(conversationId)) return 'channel';
  if (/^(a|8):/i.test(conversationId)) return 'direct';
  return 'group';
}

export function resolveTeamsTarget(t: { to: string; threadId?: string; replyTo?: string; accountId?: string }): ResolvedTarget {
  const raw = stripChannelPrefix(t.to, ['msteams', 'teams']);
  const typed = typedTarget(raw, ['user', 'conversation']);
  const threadId = nonEmpty(t.threadId);
  const replyTo = nonEmpty(t.replyTo);
  const extra = { ...(threadId ? { threadId, sessionThreadId: threadId } : {}), ...(replyTo ? { replyTo } : {}), ...(t.accountId ? { accountId: t.accountId } : {}) };
  if (typed?.type === 'user') return { to: `user:${typed.id}`, peer: { kind: 'direct', id: typed.id }, ...extra };
  // Conversation ids keep their `;messageid=` suffix out of the peer: the thread scopes the key instead.
  const conv = (typed?.id ?? raw).split(';')[0]!.trim();
  if (!/^[a-z0-9]+:[^\s]+$/i.test(conv)) throw invalidTarget('msteams', t.to, 'expected a conversation id (19:…@thread.tacv2) or user:<aadObjectId>');
  return { to: conv, peer: { kind: kindOf(conv), id: conv }, ...extra };
}

const describe = (b: unknown) => {
  const e = (b as { error?: { code?: string; message?: string } } | null)?.error;
  return e ? `${e.code ?? 'error'}: ${e.message ?? ''}`.trim() : undefined;
};

export function createTeamsChannel(): ChannelPlugin<TeamsConfig> {
  const tokens = new Map<string, { token: string; expires: number }>();
  async function appToken(cfg: TeamsConfig, signal?: AbortSignal): Promise<string> {
    const url = cfg.tokenUrl ?? 'https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token';
    const key = `${url}|${cfg.appId}`;
    const hit = tokens.get(key);
    if (hit && hit.expires > Date.now() + 60_000) return hit.token;
    const res = await httpJson({
      url,
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: cfg.appId, client_secret: cfg.appPassword, scope: 'https://api.botframework.com/.default' }),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      timeoutMs: cfg.timeoutMs,
      signal,
      describe: (b) => (b as { error_description?: string } | null)?.error_description,
    });
    const b = res.body as { access_token: string; expires_in?: number };
    tokens.set(key, { token: b.access_token, expires: Date.now() + (b.expires_in ?? 3600) * 1000 });
    return b.access_token;
  }
  return {
    id: 'msteams',
    label: 'Microsoft Teams',
    threadScoping: 'suffix',
    configSchema,
    resolveTarget: resolveTeamsTarget,
    async deliver(cfg, req) {
      if (!cfg.apiBaseUrl) throw new CrosstalkError('channel_error', 'msteams needs the connector serviceUrl (config.channels.msteams.apiBaseUrl)');
      const token = await appToken(cfg, req.signal);
      const call = (path: string, body: unknown) =>
        httpJson({ url: apiUrl(cfg.apiBaseUrl!, path), headers: { authorization: `Bearer ${token}` }, body, timeoutMs: cfg.timeoutMs, signal: req.signal, describe });
      const t = req.target;
      let conv = t.to;
      if (conv.startsWith('user:')) {
        const created = await call('/v3/conversations', { bot: { id: `28:${cfg.appId}` }, members: [{ id: t.peer.id }], isGroup: false, ...(cfg.tenantId ? { tenantId: cfg.tenantId, channelData: { tenant: { id: cfg.tenantId } } } : {}) });
        conv = (created.body as { id: string }).id;
      }
      // A channel thread is the conversation id with `;messageid=<root>`.
      if (t.threadId) conv = `${conv};messageid=${t.threadId}`;
      const activity = { type: 'message', text: req.text, textFormat: 'plain', ...(t.replyTo ? { replyToId: t.replyTo } : {}) };
      const path = t.replyTo ? `/v3/conversations/${encodeURIComponent(conv)}/activities/${encodeURIComponent(t.replyTo)}` : `/v3/conversations/${encodeURIComponent(conv)}/activities`;
      const res = await call(path, activity);
      return { messageId: String((res.body as { id?: string } | null)?.id ?? req.idempotencyKey) };
    },
  };
}
