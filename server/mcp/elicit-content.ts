// An elicitation answer checked against the server's requestedSchema (MCP's flat form schema): defaults for omitted
// fields (SEP-1034), titled/untitled/multi-select enums (SEP-1330), so the server gets exactly a valid answer.
import type { Ajv, ErrorObject } from 'ajv';
import type { LinearPatterns } from './linear-patterns';
import { type ValidationIssue, withArticle } from '../errors';

/**
 * The MCP SDK's own check of an elicitation answer: ajv with its formats, as its Server (and AjvJsonSchemaValidator)
 * run it. Everything the schema says, also what the form checks below do not know (`pattern`, `multipleOf`,
 * `exclusiveMinimum`…), is refused here with -32602, where the person can still correct it; before, such an answer
 * was accepted and then refused by the server, and the person's answer was lost. Loaded with the first answer, not at
 * the start.
 *
 * The schema is the server's, so the check is bounded (README "Limits"): its patterns run on RE2 (linear-patterns.ts),
 * never on V8's backtracking engine — `^(a+)+$` against a default of 29 a's and a `!` held the whole gateway a minute
 * (probe). A schema of more than MAX_SCHEMA_NODES sub-schemas (ajv takes ~1 ms a sub-schema: 12 s for 10,000
 * fields), or content of more than MAX_CHECKED_BYTES (a format such as `regex` over megabytes of a server's default
 * took seconds), is not checked whole: the form checks alone apply, and the server checks the rest. A fresh ajv each
 * time: its caches do not grow with every schema.
 */
let modules: Promise<{ checker: (regExp: LinearPatterns['regExp']) => Ajv; linearPatterns: () => LinearPatterns }> | undefined;
const schemaCheck = () =>
  (modules ??= Promise.all([import('ajv'), import('ajv-formats'), import('./linear-patterns')]).then(([{ Ajv }, formats, { linearPatterns }]) => {
    const addFormats = (formats.default ?? formats) as unknown as (a: Ajv) => Ajv;
    const checker = (regExp: LinearPatterns['regExp']) => addFormats(new Ajv({ strict: false, validateFormats: true, validateSchema: false, allErrors: true, code: { regExp } }));
    return { checker, linearPatterns };
  }));

/** Objects and arrays (sub-schemas, lists) a requested schema may have for the whole-schema check. */
export const MAX_SCHEMA_NODES = 200;
/** The content (with the schema's defaults) the whole-schema check reads, as JSON. */
export const MAX_CHECKED_BYTES = 64 * 1024;

/** The objects and arrays in a schema, counted up to just past `max` (so its depth is bounded too). */
function schemaNodes(v: unknown, max: number, n = { count: 0 }): number {
  if (v === null || typeof v !== 'object' || n.count > max) return n.count;
  n.count++;
  for (const x of Object.values(v)) schemaNodes(x, max, n);
  return n.count;
}

/** A refusal of one field (or of the whole content) and the schema keyword it comes from, so two checks' reports of one problem are one. */
type Issue = ValidationIssue & { keyword: string };

/** ajv's keywords for a value that is not one of an enum's (its `enum`, or `anyOf`/`oneOf` of `const`s), as the form checks name it. */
const ENUM_KEYWORDS = new Set(['enum', 'const', 'anyOf', 'oneOf']);

/** The requested schema's own refusals of `content`, as issues naming the field; a schema ajv cannot compile, or too large to check, refuses nothing here. */
async function schemaIssues(schema: ElicitSchema | undefined, content: Record<string, unknown>): Promise<Issue[]> {
  if (!schema || schemaNodes(schema, MAX_SCHEMA_NODES) > MAX_SCHEMA_NODES || JSON.stringify(content).length > MAX_CHECKED_BYTES) return [];
  const { checker, linearPatterns } = await schemaCheck();
  const patterns = linearPatterns();
  let validate;
  try {
    validate = checker(patterns.regExp).compile(schema);
  } catch {
    return [];
  }
  if (validate(content)) return [];
  return (validate.errors ?? []).map((e: ErrorObject) => {
    const params = e.params as { missingProperty?: string; additionalProperty?: string; pattern?: string };
    // The instance path is a JSON pointer: a field named `a/b` is `/a~1b` in it.
    const top = e.instancePath.split('/').filter(Boolean)[0]?.replace(/~1/g, '/').replace(/~0/g, '~');
    const field = top ?? params.missingProperty ?? params.additionalProperty;
    // A pattern that was not run (not RE2, too large, over the work budget) failed its test: said as such, not as a mismatch.
    const notRun = e.keyword === 'pattern' && params.pattern !== undefined ? patterns.refused.get(params.pattern) : undefined;
    const message = notRun ? `cannot be checked against the requested schema: ${notRun}` : (e.message ?? 'does not fit the requested schema');
    return { path: field ? `content.${field}` : 'content', message, keyword: ENUM_KEYWORDS.has(e.keyword) ? 'enum' : e.keyword };
  });
}

type Prop = {
  type?: string;
  title?: string;
  enum?: unknown[];
  oneOf?: { const?: unknown }[];
  anyOf?: { const?: unknown }[];
  items?: { enum?: unknown[]; anyOf?: { const?: unknown }[]; oneOf?: { const?: unknown }[] };
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  format?: string;
};

export interface ElicitSchema {
  type?: string;
  properties?: Record<string, Prop>;
  required?: string[];
}

export type ElicitValue = string | number | boolean | string[];

/** The values a single- or multi-select enum allows (`enum`, or the `const`s of `oneOf`/`anyOf`), or undefined. */
export function enumValues(p: Prop): unknown[] | undefined {
  if (p.type === 'array') {
    const i = p.items ?? {};
    return i.enum ?? (i.anyOf ?? i.oneOf)?.map((o) => o.const);
  }
  return p.enum ?? (p.oneOf ?? p.anyOf)?.map((o) => o.const);
}

const FORMATS: Record<string, RegExp> = {
  email: /^[^\s@]+@[^\s@]+\.[^\s@]+$/,
  date: /^\d{4}-\d{2}-\d{2}$/,
  'date-time': /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/,
};

/** A `date` or `date-time` (its shape checked) names a day that exists, and a time of day that does: not 2020-13-45. */
function realDate(v: string): boolean {
  const [y, m, d] = v.slice(0, 10).split('-').map(Number) as [number, number, number];
  const day = new Date(Date.UTC(y, m - 1, d));
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== m - 1 || day.getUTCDate() !== d) return false;
  if (v.length === 10) return true;
  const [hh, mm, ss = 0] = v.slice(11, 19).split(':').map((x) => Number.parseInt(x, 10)) as [number, number, number?];
  return hh < 24 && mm < 60 && ss < 61; // 60: a leap second
}

/**
 * A string's length as JSON Schema counts it (and ajv, which the server checks with): in code points, so an emoji is
 * one character, not two UTF-16 units.
 */
function codePoints(v: string): number {
  let n = 0;
  for (const _ of v) n++;
  return n;
}

/** A record with no prototype: a field named `toString`, `constructor` or `__proto__` is a field like any other. */
const record = <T>(): Record<string, T> => Object.create(null) as Record<string, T>;

/** What is wrong with one value, as the schema keyword it breaks and a plain message; null when it fits. */
function checkOne(p: Prop, v: unknown): [keyword: string, message: string] | null {
  const allowed = enumValues(p);
  switch (p.type) {
    case 'boolean':
      return typeof v === 'boolean' ? null : ['type', 'must be a boolean'];
    case 'integer':
    case 'number':
      if (typeof v !== 'number' || !Number.isFinite(v)) return ['type', `must be ${withArticle(p.type)}`];
      if (p.type === 'integer' && !Number.isInteger(v)) return ['type', 'must be an integer'];
      if (p.minimum !== undefined && v < p.minimum) return ['minimum', `must be at least ${p.minimum}`];
      if (p.maximum !== undefined && v > p.maximum) return ['maximum', `must be at most ${p.maximum}`];
      return null;
    case 'array': {
      if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) return ['type', 'must be a list of strings'];
      if (allowed && v.some((x) => !allowed.includes(x))) return ['enum', `each must be one of ${allowed.join(', ')}`];
      if (p.minItems !== undefined && v.length < p.minItems) return ['minItems', `must have at least ${p.minItems} items`];
      if (p.maxItems !== undefined && v.length > p.maxItems) return ['maxItems', `must have at most ${p.maxItems} items`];
      return null;
    }
    case 'string':
    default: {
      if (typeof v !== 'string') return ['type', 'must be a string'];
      if (allowed) return allowed.includes(v) ? null : ['enum', `must be one of ${allowed.join(', ')}`];
      const length = p.minLength !== undefined || p.maxLength !== undefined ? codePoints(v) : 0;
      if (p.minLength !== undefined && length < p.minLength) return ['minLength', `must be at least ${p.minLength} characters`];
      if (p.maxLength !== undefined && length > p.maxLength) return ['maxLength', `must be at most ${p.maxLength} characters`];
      if (p.format === 'uri' && !URL.canParse(v)) return ['format', 'must be a URI'];
      const re = p.format ? FORMATS[p.format] : undefined;
      if (re && (!re.test(v) || ((p.format === 'date' || p.format === 'date-time') && !realDate(v)))) return ['format', `must be ${withArticle(p.format!)}`];
      return null;
    }
  }
}

type Checked = { ok: true; content: Record<string, ElicitValue> } | { ok: false; issues: ValidationIssue[] };

/**
 * The form checks: the content to send (the valid given values plus the schema's defaults for omitted fields), the
 * issues, and `candidate`, the content as it would go with the refused values in it (for the whole-schema check);
 * undefined when the content is not an object at all.
 */
function formCheck(schema: ElicitSchema | undefined, content: unknown): { out: Record<string, ElicitValue>; issues: Issue[]; candidate?: Record<string, unknown> } {
  const props = schema?.properties ?? {};
  const given = content === undefined || content === null ? {} : content;
  if (typeof given !== 'object' || Array.isArray(given)) return { out: {}, issues: [{ path: 'content', message: 'must be an object', keyword: 'type' }] };
  const issues: Issue[] = [];
  // No prototype: `k in out` found Object.prototype's `toString` or `constructor`, and such a field lost its default
  // (or was not reported missing); `out.__proto__ = …` set nothing.
  const out = record<ElicitValue>();
  const refused = record<unknown>();
  for (const [k, v] of Object.entries(given as Record<string, unknown>)) {
    // Own fields only: `constructor` or `toString` found Object.prototype's and passed as a field of the schema.
    const p = Object.hasOwn(props, k) ? props[k] : undefined;
    if (!p) {
      issues.push({ path: `content.${k}`, message: 'is not a field of the requested schema', keyword: 'additionalProperties' });
      continue;
    }
    const why = checkOne(p, v);
    if (why) {
      issues.push({ path: `content.${k}`, message: why[1], keyword: why[0] });
      refused[k] = v;
    } else out[k] = v as ElicitValue;
  }
  for (const [k, p] of Object.entries(props)) {
    if (Object.hasOwn(out, k) || issues.some((i) => i.path === `content.${k}`)) continue;
    if (p.default !== undefined && !checkOne(p, p.default)) out[k] = p.default as ElicitValue;
    else if (schema?.required?.includes(k)) issues.push({ path: `content.${k}`, message: 'is required', keyword: 'required' });
  }
  return { out, issues, candidate: Object.assign(record<unknown>(), out, refused) };
}

const plain = (issues: Issue[]): ValidationIssue[] => issues.map(({ path, message }) => ({ path, message }));

/**
 * The content to send for an `accept`: the given values, plus the schema's default for every omitted field that has
 * one; `issues` (for a -32602) when a value does not fit, a field is unknown, or a required one is missing.
 */
export function checkElicitContent(schema: ElicitSchema | undefined, content: unknown): Checked {
  const { out, issues } = formCheck(schema, content);
  return issues.length ? { ok: false, issues: plain(issues) } : { ok: true, content: out };
}

/**
 * An `accept`'s content: the form checks above (their plain messages) and the whole schema as the server checks it,
 * in one refusal. Before, a refused answer's whole-schema issues (`pattern`, `multipleOf`…) came only after its form
 * issues were mended, in a second refusal. A problem both find on a field (its keyword) is listed once, in the form
 * checks' words; the whole-schema check sees the refused values too, so a value that breaks both kinds is named for each.
 */
export async function checkElicitAnswer(schema: ElicitSchema | undefined, content: unknown): Promise<Checked> {
  const { out, issues, candidate } = formCheck(schema, content);
  const seen = new Set(issues.map((i) => `${i.path}\0${i.keyword}`));
  const all = [...issues];
  for (const i of candidate ? await schemaIssues(schema, candidate) : []) {
    const key = `${i.path}\0${i.keyword}`;
    if (seen.has(key)) continue;
    seen.add(key);
    all.push(i);
  }
  return all.length ? { ok: false, issues: plain(all) } : { ok: true, content: out };
}

/** Defaults only (an answer with no person: the conformance client, SEP-1034). */
export function elicitDefaults(schema: ElicitSchema | undefined): Record<string, ElicitValue> {
  const out = record<ElicitValue>();
  for (const [k, p] of Object.entries(schema?.properties ?? {})) if (p.default !== undefined) out[k] = p.default as ElicitValue;
  return out;
}
