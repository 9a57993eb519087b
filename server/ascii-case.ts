// Letter case as sender and chat ids count it: ASCII letters only, so two different ids never become one.

/**
 * `s` with A–Z made a–z and nothing else changed. String.prototype.toLowerCase maps other letters too (the Kelvin sign
 * U+212A to `k`, the Ångström sign to `å`): `\u212Aate` was `kate`, in the same session and on kate's allowlist.
 */
export const asciiLower = (s: string): string => s.replace(/[A-Z]+/g, (c) => c.toLowerCase());
