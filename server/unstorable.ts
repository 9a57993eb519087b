// Strings the stores cannot hold as sent are refused at the edge, so both stores answer alike: U+0000 and lone surrogates.

/** The refusal's wording, one for every edge (JSON-RPC, tRPC, MCP, channels). */
export const UNSTORABLE_TEXT = 'strings must not contain NUL (U+0000) or a lone surrogate (U+D800–U+DFFF)';

/** Whether a string can be stored as sent: no U+0000 (PostgreSQL text cannot hold it), well-formed UTF-16. */
function storable(s: string): boolean {
  // A lone surrogate is stored as U+FFFD by both stores (they keep UTF-8): two different idempotency keys became one key
  // and the second message was dropped as a repeat, a label or message read back differently from what was sent.
  return !s.includes('\u0000') && (s as string & { isWellFormed(): boolean }).isWellFormed();
}

/**
 * The path of the first string (value or key) that cannot be stored as sent, or null: one holding U+0000 or a lone
 * surrogate. Refused at the edge as an `invalid_request` (`invalid_cursor` on a cursor), never an `internal` from the
 * database or a silent U+FFFD.
 */
export function nulPath(v: unknown, path = ''): string | null {
  if (typeof v === 'string') return storable(v) ? null : path;
  if (!v || typeof v !== 'object') return null;
  for (const [k, x] of Object.entries(v)) {
    if (!storable(k)) return path ? `${path}.${k}` : k;
    const p = nulPath(x, path ? `${path}.${k}` : k);
    if (p !== null) return p;
  }
  return null;
}
