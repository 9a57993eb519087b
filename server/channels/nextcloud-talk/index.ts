// Nextcloud Talk: chat messages over the OCS API (basic auth with an app password); a user target opens the one-to-one room.
import crypto from 'node:crypto';
import { z } from 'zod';
import { CrosstalkError } from '../../errors';
import { apiUrl, baseChannelConfig, httpJson } from '../delivery';
import { invalidTarget, nonEmpty, stripChannelPrefix, typedTarget } from '../targets';
import type { ChannelPlugin, ResolvedTarget } from '../types';

const configSchema = z.object({
  ...baseChannelConfig,
  username: z.string().min(1),
  appPassword: z.string().min(1),
});
type TalkConfig = z.infer<typeof configSchema>;

export function resolveTalkTarget(t: { to: string; replyTo?: string; accountId?: string }): ResolvedTarget {
  const raw = stripChannelPrefix(t.to, ['nextcloud-talk', 'nextcloud', 'talk']);
  const typed = typedTarget(raw, ['user', 'room']);
  const replyTo = nonEmpty(t.replyTo);
  if (replyTo && !/^\d+$/.test(replyTo)) throw invalidTarget('nextcloud-talk', t.to, 'replyTo must be a message id');
  const extra = { ...(replyTo ? { replyTo } : {}), ...(t.accountId ? { accountId: t.accountId } : {}) };
  if (typed?.type === 'user' || raw.startsWith('@')) {
    const id = (typed?.id ?? raw.slice(1)).trim();
    if (!id) throw invalidTarget('nextcloud-talk', t.to, 'name the user');
    return { to: `user:${id}`, peer: { kind: 'direct', id }, ...extra };
  }
  const token = typed?.id ?? raw;
  if (!/^[a-z0-9]{4,64}$/i.test(token)) throw invalidTarget('nextcloud-talk', t.to, 'expected a room token or user:<id>');
  return { to: token, peer: { kind: 'group', id: token }, ...extra };
}

const describe = (b: unknown) => {
  const meta = (b as { ocs?: { meta?: { statuscode?: number; message?: string } } } | null)?.ocs?.meta;
  return meta ? `${meta.statuscode ?? ''} ${meta.message ?? ''}`.trim() || undefined : undefined;
};

export function createNextcloudTalkChannel(): ChannelPlugin<TalkConfig> {
  return {
    id: 'nextcloud-talk',
    label: 'Nextcloud Talk',
    threadScoping: 'none',
    configSchema,
    resolveTarget: resolveTalkTarget,
    async deliver(cfg, req) {
      if (!cfg.apiBaseUrl) throw new CrosstalkError('channel_error', 'nextcloud-talk needs the server url (config.channels.nextcloud-talk.apiBaseUrl)');
      const headers = {
        authorization: `Basic ${Buffer.from(`${cfg.username}:${cfg.appPassword}`).toString('base64')}`,
        'ocs-apirequest': 'true',
      };
      const call = (path: string, body: unknown) =>
        httpJson({ url: apiUrl(cfg.apiBaseUrl!, path), headers, body, timeoutMs: cfg.timeoutMs, signal: req.signal, describe });
      const t = req.target;
      let token = t.to;
      if (token.startsWith('user:')) {
        // roomType 1 = one-to-one; Talk answers with the existing room when there is one.
        const room = await call('/ocs/v2.php/apps/spreed/api/v4/room', { roomType: 1, invite: t.peer.id });
        token = (room.body as { ocs: { data: { token: string } } }).ocs.data.token;
      }
      const res = await call(`/ocs/v2.php/apps/spreed/api/v1/chat/${encodeURIComponent(token)}`, {
        message: req.text,
        referenceId: crypto.createHash('sha256').update(req.idempotencyKey).digest('hex'),
        ...(t.replyTo ? { replyTo: Number(t.replyTo) } : {}),
      });
      return { messageId: String((res.body as { ocs: { data: { id: number } } }).ocs.data.id) };
    },
  };
}
