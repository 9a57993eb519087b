// Zalo Personal: personal accounts have no public API, so sessions route and mirror like any channel but delivery refuses, saying so.
import { invalidTarget, stripChannelPrefix } from '../targets';
import { DeliveryFailure } from '../delivery';
import type { ChannelPlugin, ResolvedTarget } from '../types';

/** A direct chat unless the target says `group:`. */
export function resolveZaloUserTarget(t: { to: string; accountId?: string }): ResolvedTarget {
  const raw = stripChannelPrefix(t.to, ['zalouser', 'zlu']);
  const group = /^group:(.+)$/i.exec(raw);
  const id = (group?.[1] ?? raw.replace(/^user:/i, '')).trim();
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) throw invalidTarget('zalouser', t.to, 'expected a user id or group:<id>');
  const acct = t.accountId ? { accountId: t.accountId } : {};
  return { to: id, peer: { kind: group ? 'group' : 'direct', id }, ...acct };
}

export function createZaloUserChannel(): ChannelPlugin {
  return {
    id: 'zalouser',
    label: 'Zalo Personal',
    threadScoping: 'none',
    resolveTarget: resolveZaloUserTarget,
    async deliver() {
      throw new DeliveryFailure('unsupported', 'Zalo Personal has no public API: crosstalk routes zalouser sessions but cannot deliver to them; nothing was sent');
    },
  };
}
