// JSON text that PostgreSQL's jsonb takes: JSON.stringify writes a lone UTF-16 surrogate (valid in a JS string, and in
// JSON text as "\ud800") as that escape, and jsonb refuses it ("Unicode low surrogate must follow a high surrogate"),
// so one such character in a message, a model's answer or a tool's result failed the whole statement that wrote it.

/** A string as well-formed Unicode: each lone surrogate becomes U+FFFD (what SQLite's UTF-8 text stores for it). */
const wellFormed = (_key: string, v: unknown) => (typeof v === 'string' ? (v as WellFormable).toWellFormed() : v);
/** ES2024's String.prototype.toWellFormed (Node 20+), outside the project's ES2023 lib. */
type WellFormable = string & { toWellFormed(): string };

/**
 * JSON.stringify, with every lone surrogate in a string value written as U+FFFD. The output holds an escape `\ud…`
 * only when a string had a lone surrogate (a pair is written as is) or a backslash before "ud" (written `\\ud`): only
 * then is it written again, with the strings made well-formed.
 */
export function wellFormedJson(v: unknown): string {
  const s = JSON.stringify(v);
  return s !== undefined && s.includes('\\ud') ? JSON.stringify(v, wellFormed) : s;
}
