// Zalo (Bot API): sendMessage on the bot platform's Telegram-style HTTP API.
import { z } from 'zod';
import { apiUrl, baseChannelConfig, DeliveryFailure, failureForStatus, httpJson } from '../delivery';
import { invalidTarget, stripChannelPrefix, typedTarget } from '../targets';
import type { ChannelPlugin, ResolvedTarget } from '../types';

const configSchema = z.object({ ...baseChannelConfig, botToken: z.string().min(1) });
type ZaloConfig = z.infer<typeof configSchema>;

export function resolveZaloTarget(t: { to: string; accountId?: string }): ResolvedTarget {
  const raw = stripChannelPrefix(t.to, ['zalo']);
  const typed = typedTarget(raw, ['user', 'group']);
  const id = typed?.id ?? raw;
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) throw invalidTarget('zalo', t.to, 'expected a user id or group:<id>');
  const acct = t.accountId ? { accountId: t.accountId } : {};
  return typed?.type === 'group' ? { to: id, peer: { kind: 'group', id }, ...acct } : { to: id, peer: { kind: 'direct', id }, ...acct };
}

interface ZaloAnswer {
  ok?: boolean;
  error_code?: number;
  description?: string;
  result?: { message_id?: string | number };
  parameters?: { retry_after?: number };
}

export function createZaloChannel(): ChannelPlugin<ZaloConfig> {
  return {
    id: 'zalo',
    label: 'Zalo',
    threadScoping: 'none',
    configSchema,
    resolveTarget: resolveZaloTarget,
    async deliver(cfg, req) {
      const base = cfg.apiBaseUrl ?? 'https://bot-api.zaloplatforms.com';
      const res = await httpJson({
        url: apiUrl(base, `/bot${cfg.botToken}/sendMessage`),
        body: { chat_id: req.target.to, text: req.text },
        timeoutMs: cfg.timeoutMs,
        signal: req.signal,
        describe: (b) => (b as ZaloAnswer | null)?.description,
        retryAfterFromBody: (b) => ((b as ZaloAnswer | null)?.parameters?.retry_after ?? NaN) * 1000 || undefined,
      });
      // The platform may also answer 200 with {ok: false, error_code}.
      const b = res.body as ZaloAnswer | null;
      if (!b || b.ok !== true) {
        if (b?.error_code) throw failureForStatus(b.error_code, b.description ?? 'error', { retryAfterMs: b.parameters?.retry_after ? b.parameters.retry_after * 1000 : undefined });
        throw new DeliveryFailure('client', 'unexpected answer from Zalo');
      }
      return { messageId: String(b.result?.message_id ?? req.idempotencyKey) };
    },
  };
}
