// Whether an MCP tool's input schema is one a model provider can take: a JSON object schema of sane size and shape.
// Checked by walking it (never by running it: a `pattern` is compiled here, not matched against anything).

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
const MAX_DEPTH = 32;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const SCHEMAS = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'additionalItems', 'unevaluatedProperties', 'unevaluatedItems'];
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];

function walk(s: unknown, at: string, depth: number): string | null {
  if (typeof s === 'boolean') return null;
  if (!isObject(s)) return `${at} is not a schema`;
  if (depth > MAX_DEPTH) return `nested deeper than ${MAX_DEPTH} levels`;
  if ('type' in s) {
    const list = Array.isArray(s.type) ? s.type : [s.type];
    if (!list.length || list.some((t) => typeof t !== 'string' || !TYPES.has(t))) return `${at}: type ${JSON.stringify(s.type)} is not a JSON Schema type`;
  }
  if ('required' in s && !(Array.isArray(s.required) && s.required.every((r) => typeof r === 'string'))) return `${at}: required is not a list of names`;
  if ('enum' in s && !Array.isArray(s.enum)) return `${at}: enum is not a list`;
  if ('pattern' in s) {
    if (typeof s.pattern !== 'string') return `${at}: pattern is not a string`;
    try {
      new RegExp(s.pattern);
    } catch {
      return `${at}: pattern ${JSON.stringify(s.pattern.slice(0, 100))} is not a regular expression`;
    }
  }
  for (const k of SCHEMA_MAPS) {
    if (!(k in s)) continue;
    const m = s[k];
    if (!isObject(m)) return `${at}.${k} is not an object`;
    for (const [name, sub] of Object.entries(m)) {
      const bad = walk(sub, `${at}.${k}.${name}`, depth + 1);
      if (bad) return bad;
    }
  }
  for (const k of SCHEMAS) {
    if (!(k in s)) continue;
    const subs = k === 'items' && Array.isArray(s[k]) ? (s[k] as unknown[]) : [s[k]];
    for (const sub of subs) {
      const bad = walk(sub, `${at}.${k}`, depth + 1);
      if (bad) return bad;
    }
  }
  for (const k of SCHEMA_LISTS) {
    if (!(k in s)) continue;
    if (!Array.isArray(s[k])) return `${at}.${k} is not a list`;
    for (const [i, sub] of (s[k] as unknown[]).entries()) {
      const bad = walk(sub, `${at}.${k}[${i}]`, depth + 1);
      if (bad) return bad;
    }
  }
  return null;
}

/** null when the tool's input schema is usable; otherwise why not. */
export function inputSchemaProblem(schema: unknown): string | null {
  if (!isObject(schema)) return 'its input schema is not an object';
  if (schema.type !== undefined && schema.type !== 'object') return `its input schema has type ${JSON.stringify(schema.type)}, not "object"`;
  const bad = walk(schema, 'inputSchema', 0);
  return bad ? `its input schema is unusable (${bad})` : null;
}
