// Strings with U+0000 are refused at the edge: PostgreSQL text cannot hold them, so both stores answer alike.

/**
 * The path of the first string holding U+0000, or null. PostgreSQL text cannot store it, so both stores refuse it
 * at the edge alike (an `invalid_request`, not an `internal` from the database).
 */
export function nulPath(v: unknown, path = ''): string | null {
  if (typeof v === 'string') return v.includes('\u0000') ? path : null;
  if (!v || typeof v !== 'object') return null;
  for (const [k, x] of Object.entries(v)) {
    if (k.includes('\u0000')) return path ? `${path}.${k}` : k;
    const p = nulPath(x, path ? `${path}.${k}` : k);
    if (p !== null) return p;
  }
  return null;
}
