// Opaque keyset cursors: base64url JSON tagged with the list they belong to, so a foreign cursor is refused.
import { CrosstalkError } from '../errors';
import { MAX_SESSION_KEY } from '../sessions/keys';
import { nulPath } from '../unstorable';

/** `invalid_cursor`, naming the field (a -32602's `data.issues`, CONTRACT §3). */
const invalidCursor = (message: string) => new CrosstalkError('invalid_cursor', message, [{ path: 'cursor', message }]);

export function encodeCursor(list: string, scope: string, key: Array<string | number>): string {
  return Buffer.from(JSON.stringify({ l: list, s: scope, k: key }), 'utf8').toString('base64url');
}

/** Decodes a cursor of `list` for `scope`; anything else is `invalid_cursor`. */
export function decodeCursor(cursor: string, list: string, scope: string, arity: number): Array<string | number> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor('cursor does not decode');
  }
  const p = parsed as { l?: unknown; s?: unknown; k?: unknown };
  if (!p || typeof p !== 'object' || p.l !== list || p.s !== scope || !Array.isArray(p.k) || p.k.length !== arity) {
    throw invalidCursor('cursor belongs to another list');
  }
  const shape = SHAPES[list];
  const ok = (v: unknown, i: number) => {
    const want = shape?.[i];
    if (want === 'id') return typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
    if (want === 'time') return typeof v === 'string' && v.length <= 64 && !Number.isNaN(Date.parse(v));
    // A key is as long as a session key may be (a sessions page can end on the longest one).
    if (want === 'key') return typeof v === 'string' && v.length > 0 && v.length <= MAX_SESSION_KEY;
    if (want === 'offset') return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
    return typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
  };
  // A string PostgreSQL cannot take (U+0000, a lone surrogate) does not decode either: it was an `internal` there.
  // Each position is checked for what it holds: a forged value never reaches a query (PostgreSQL would refuse its type).
  if (!p.k.every(ok) || nulPath(p.k) !== null) throw invalidCursor('cursor does not decode');
  return p.k as Array<string | number>;
}

/** What each position of a known list's cursor holds: a row id, a timestamp, a key, a row offset. */
const SHAPES: Record<string, ReadonlyArray<'id' | 'time' | 'key' | 'offset'>> = {
  search: ['offset', 'id'],
  sessions: ['time', 'key'],
  history: ['id'],
  delegates: ['time', 'key'],
  delegate_messages: ['id'],
  approvals_history: ['time', 'key'],
  deliveries: ['time', 'key'],
};
