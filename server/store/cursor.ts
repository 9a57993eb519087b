// Opaque keyset cursors: base64url JSON tagged with the list they belong to, so a foreign cursor is refused.
import { CrosstalkError } from '../errors';

export function encodeCursor(list: string, scope: string, key: Array<string | number>): string {
  return Buffer.from(JSON.stringify({ l: list, s: scope, k: key }), 'utf8').toString('base64url');
}

/** Decodes a cursor of `list` for `scope`; anything else is `invalid_cursor`. */
export function decodeCursor(cursor: string, list: string, scope: string, arity: number): Array<string | number> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new CrosstalkError('invalid_cursor', 'cursor does not decode');
  }
  const p = parsed as { l?: unknown; s?: unknown; k?: unknown };
  if (!p || typeof p !== 'object' || p.l !== list || p.s !== scope || !Array.isArray(p.k) || p.k.length !== arity) {
    throw new CrosstalkError('invalid_cursor', 'cursor belongs to another list');
  }
  if (!p.k.every((v) => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)))) {
    throw new CrosstalkError('invalid_cursor', 'cursor does not decode');
  }
  return p.k as Array<string | number>;
}
