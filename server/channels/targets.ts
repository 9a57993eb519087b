// Small helpers for the channels' target rules: prefix stripping, typed-prefix parsing, refusals.
import { CrosstalkError } from '../errors';

/** A target the channel cannot take: `invalid_request` naming the field (`to`), as every -32602 lists its issues (CONTRACT §3). */
export function invalidTarget(channel: string, to: string, why: string): CrosstalkError {
  const message = `${channel} target "${to}": ${why}`;
  return new CrosstalkError('invalid_request', message, [{ path: 'to', message }]);
}

/** Removes a leading `<channel>:` (or an alias) so `telegram:-100123` and `-100123` are the same target. */
export function stripChannelPrefix(to: string, names: string[]): string {
  const t = to.trim();
  for (const n of names) if (t.toLowerCase().startsWith(`${n}:`)) return t.slice(n.length + 1).trim();
  return t;
}

/** Splits `user:U123` / `channel:C1` style targets; null when the target has none of the given prefixes. */
export function typedTarget(to: string, prefixes: string[]): { type: string; id: string } | null {
  const i = to.indexOf(':');
  if (i <= 0) return null;
  const type = to.slice(0, i).toLowerCase();
  if (!prefixes.includes(type)) return null;
  const id = to.slice(i + 1).trim();
  return id ? { type, id } : null;
}

export const nonEmpty = (s: string | undefined): string | undefined => (s && s.trim() ? s.trim() : undefined);
