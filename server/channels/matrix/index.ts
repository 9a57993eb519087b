// Matrix: m.room.message over the client-server API (PUT with a txnId, so retries cannot duplicate); m.thread relations scope sessions.
import { z } from 'zod';
import { CrosstalkError } from '../../errors';
import { apiUrl, baseChannelConfig, httpJson, type HttpJsonRequest } from '../delivery';
import { invalidTarget, nonEmpty, stripChannelPrefix, typedTarget } from '../targets';
import type { ChannelPlugin, ResolvedTarget } from '../types';

const configSchema = z.object({
  ...baseChannelConfig,
  accessToken: z.string().min(1),
  /** The bot's own user id; asked of /account/whoami when missing. */
  userId: z.string().optional(),
});
type MatrixConfig = z.infer<typeof configSchema>;

/** Room ids (`!x:server`), aliases (`#x:server`) and users (`@u:server`); keys drop the sigil. */
export function resolveMatrixTarget(t: { to: string; threadId?: string; replyTo?: string; accountId?: string }): ResolvedTarget {
  const raw = stripChannelPrefix(t.to, ['matrix']);
  const typed = typedTarget(raw, ['room', 'user']);
  const v = typed?.id ?? raw;
  const threadId = nonEmpty(t.threadId);
  const replyTo = nonEmpty(t.replyTo);
  const extra = { ...(threadId ? { threadId, sessionThreadId: threadId } : {}), ...(replyTo ? { replyTo } : {}), ...(t.accountId ? { accountId: t.accountId } : {}) };
  const m = /^([!#@])([^:\s]+:[^\s]+)$/.exec(v);
  if (!m) throw invalidTarget('matrix', t.to, 'expected !room:server, #alias:server or @user:server');
  if (m[1] === '@' || typed?.type === 'user') return { to: v, peer: { kind: 'direct', id: m[2]! }, ...extra };
  return { to: v, peer: { kind: 'group', id: m[2]! }, ...extra };
}

const describe = (b: unknown) => {
  const e = b as { errcode?: string; error?: string } | null;
  return e && typeof e === 'object' && e.errcode ? `${e.errcode}: ${e.error ?? ''}`.trim() : undefined;
};
const retryAfterFromBody = (b: unknown) => {
  const ms = (b as { retry_after_ms?: unknown } | null)?.retry_after_ms;
  return typeof ms === 'number' ? ms : undefined;
};

export function createMatrixChannel(): ChannelPlugin<MatrixConfig> {
  // DM rooms found or created, per homeserver and user: saves the lookups on the next send.
  const dmRooms = new Map<string, string>();
  return {
    id: 'matrix',
    label: 'Matrix',
    threadScoping: 'suffix',
    configSchema,
    resolveTarget: resolveMatrixTarget,
    async deliver(cfg, req) {
      if (!cfg.apiBaseUrl) throw new CrosstalkError('channel_error', 'matrix needs the homeserver url (config.channels.matrix.apiBaseUrl)');
      const base = cfg.apiBaseUrl;
      const call = (path: string, o: Partial<HttpJsonRequest> = {}) =>
        httpJson({ url: apiUrl(base, path), headers: { authorization: `Bearer ${cfg.accessToken}` }, timeoutMs: cfg.timeoutMs, signal: req.signal, describe, retryAfterFromBody, ...o });
      const t = req.target;
      let roomId = t.to;
      if (roomId.startsWith('#')) {
        const r = await call(`/_matrix/client/v3/directory/room/${encodeURIComponent(roomId)}`, { method: 'GET' });
        roomId = (r.body as { room_id: string }).room_id;
      } else if (roomId.startsWith('@')) {
        const key = `${base}|${roomId}`;
        let dm = dmRooms.get(key);
        if (!dm) {
          const me = cfg.userId ?? ((await call('/_matrix/client/v3/account/whoami', { method: 'GET' })).body as { user_id: string }).user_id;
          let direct: Record<string, string[]> = {};
          try {
            direct = (await call(`/_matrix/client/v3/user/${encodeURIComponent(me)}/account_data/m.direct`, { method: 'GET' })).body as Record<string, string[]>;
          } catch (e) {
            if ((e as { o?: { status?: number } }).o?.status !== 404) throw e;
          }
          dm = direct[roomId]?.[0];
          if (!dm) {
            const created = await call('/_matrix/client/v3/createRoom', { body: { is_direct: true, invite: [roomId], preset: 'trusted_private_chat' } });
            dm = (created.body as { room_id: string }).room_id;
            await call(`/_matrix/client/v3/user/${encodeURIComponent(me)}/account_data/m.direct`, { method: 'PUT', body: { ...direct, [roomId]: [dm, ...(direct[roomId] ?? [])] } });
          }
          dmRooms.set(key, dm);
        }
        roomId = dm;
      }
      const content: Record<string, unknown> = { msgtype: 'm.text', body: req.text };
      if (t.threadId) {
        content['m.relates_to'] = { rel_type: 'm.thread', event_id: t.threadId, is_falling_back: true, 'm.in_reply_to': { event_id: t.replyTo ?? t.threadId } };
      } else if (t.replyTo) {
        content['m.relates_to'] = { 'm.in_reply_to': { event_id: t.replyTo } };
      }
      // The transaction id is the send's idempotency key: the homeserver answers a repeat with the same event.
      const res = await call(`/_matrix/client/v3/rooms/${encodeURIComponent(roomId)}/send/m.room.message/${encodeURIComponent(req.idempotencyKey)}`, {
        method: 'PUT',
        body: content,
        safeToRetry: true,
      });
      return { messageId: (res.body as { event_id: string }).event_id };
    },
  };
}
