// Session key helpers (CONTRACT §4): the agent id inside a key and the kind a key denotes.
import type { SessionKind } from '../events/types';

/** The longest session key a request may name (CONTRACT §4). */
export const MAX_SESSION_KEY = 1024;

export const SESSION_KEY_RE = /^agent:([a-z0-9._+-]+):([a-z0-9:._+-]+)$/;

export function agentIdOf(key: string): string | null {
  return SESSION_KEY_RE.exec(key)?.[1] ?? null;
}

export function sessionKindOf(key: string): SessionKind {
  const m = SESSION_KEY_RE.exec(key);
  if (!m) return 'other';
  const rest = m[2]!;
  if (rest === 'main') return 'main';
  if (rest.startsWith('subagent:')) return 'subagent';
  if (/(^|:)(direct|group|channel):/.test(rest)) return 'channel';
  if (rest.startsWith('a2a:')) return 'channel'; // A2A contexts show in the room like channel sessions
  return 'other';
}

export const mainSessionKey = (agentId: string) => `agent:${agentId}:main`;

/** Lowercases ASCII only: a look-alike such as the Kelvin sign (U+212A → `k`) stays as it is and fails validation. */
export const asciiLower = (s: string) => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
