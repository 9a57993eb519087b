// Trust follows the run (CONTRACT §5 "Trust"): where a run's trust came from, and how runs it starts inherit it.
import type { Trust } from '../events/types';

export type { Trust };

export const OPERATOR: Trust = { kind: 'operator' };

/**
 * The trust a run carries, read from its stored origin: an explicit `trust` (inherited from the run that started it),
 * else a channel origin (a channel sender started it), else the operator (the API token holder).
 */
export function trustOf(origin: unknown): Trust {
  if (!origin || typeof origin !== 'object') return OPERATOR;
  const o = origin as { trust?: unknown; channel?: unknown };
  const t = o.trust as { kind?: unknown; channel?: unknown; peer?: unknown } | undefined;
  if (t && t.kind === 'channel' && typeof t.channel === 'string' && typeof t.peer === 'string') return { kind: 'channel', channel: t.channel, peer: t.peer };
  const c = o.channel as { id?: unknown; from?: unknown; to?: unknown } | undefined;
  if (c && typeof c === 'object' && typeof c.id === 'string') return { kind: 'channel', channel: c.id, peer: String(c.from ?? c.to ?? 'unknown') };
  return OPERATOR;
}

/** What a run adds to the origin of a run it starts (sessions_send, agents_message, delegates, callbacks). */
export function carryTrust(origin: unknown): { trust?: Trust } {
  const t = trustOf(origin);
  return t.kind === 'channel' ? { trust: t } : {};
}

/** The weaker of several trusts: any channel trust wins over the operator's. */
export function weakest(trusts: Trust[]): Trust {
  return trusts.find((t) => t.kind === 'channel') ?? OPERATOR;
}

export const sameTrust = (a: Trust, b: Trust) =>
  a.kind === b.kind && (a.kind === 'operator' || (b.kind === 'channel' && a.channel === b.channel && a.peer === b.peer));

/** How a decision names the trust it applied, for reasons and logs. */
export const describeTrust = (t: Trust) => (t.kind === 'operator' ? 'the operator' : `channel sender ${t.channel}:${t.peer}`);
