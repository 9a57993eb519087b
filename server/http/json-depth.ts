// The one JSON nesting limit of every entry point (CONTRACT §3: deeper than 64 levels is -32600): checked on the raw text, without recursion.

/** How deep a request's content may nest (its params, its input, a webhook's payload). */
export const MAX_JSON_DEPTH = 64;

export const TOO_DEEP_MESSAGE = `JSON nested deeper than ${MAX_JSON_DEPTH} levels`;

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

/**
 * True when the JSON text nests objects and arrays deeper than `MAX_JSON_DEPTH + envelope` levels. `envelope` counts
 * the levels a protocol wraps around the content (1 for a JSON-RPC request around its params, 2 for a batch), so
 * "65 levels of params" is refused and 64 are not. One pass over the characters, brackets inside strings skipped;
 * no recursion, so it is safe on any input, and it runs before anything recursive (zod, NUL checks, SDKs) sees it.
 * Text that is not JSON is measured the same way (the caller parses it first when it must tell the two apart).
 */
export function jsonTooDeep(text: string, envelope = 0): boolean {
  const limit = MAX_JSON_DEPTH + envelope;
  // Fewer brackets than the limit cannot nest past it (the common case: no per-character loop below).
  if (text.length <= limit) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return false;
}

/**
 * The same limit on a body that may be JSON or a form (some platforms post `payload=<json>`): a JSON body is measured
 * whole, a form's values that look like JSON each on their own.
 */
export function bodyTooDeep(raw: string): boolean {
  const first = raw.trimStart()[0];
  if (first === '{' || first === '[') return jsonTooDeep(raw);
  if (raw.length <= MAX_JSON_DEPTH || !raw.includes('=')) return false;
  for (const value of new URLSearchParams(raw).values()) {
    const v = value.trimStart()[0];
    if ((v === '{' || v === '[') && jsonTooDeep(value)) return true;
  }
  return false;
}
