// An elicitation form's answer checked against the server's requestedSchema (CONTRACT §5): formats name real values.
import { describe, expect, it } from 'vitest';
import { checkElicitAnswer, checkElicitContent, MAX_CHECKED_BYTES, MAX_SCHEMA_NODES } from './elicit-content';
import { MAX_PATTERN_CHARS, MAX_PATTERN_PROGRAM, programBound, toRe2Syntax } from './linear-patterns';

const schema = (format: string) => ({ type: 'object' as const, properties: { v: { type: 'string' as const, format } }, required: ['v'] });
const ok = (format: string, v: string) => checkElicitContent(schema(format) as never, { v }).ok;

describe('elicitation content formats', () => {
  it('a date is a day that exists: not month 13, day 45, nor 30 February', () => {
    expect(ok('date', '2020-02-29')).toBe(true);
    expect(ok('date', '2020-13-45')).toBe(false);
    expect(ok('date', '2021-02-29')).toBe(false);
    expect(ok('date', '2020-04-31')).toBe(false);
    expect(ok('date', '20-04-01')).toBe(false);
  });
  it('a date-time is a real day and time of day, with its offset', () => {
    expect(ok('date-time', '2020-02-29T23:59:59Z')).toBe(true);
    expect(ok('date-time', '2020-06-30T23:59:60Z')).toBe(true); // a leap second
    expect(ok('date-time', '2020-07-01T01:59:60+02:00')).toBe(true); // the same one, two hours east
    expect(ok('date-time', '2020-02-30T10:00:00Z')).toBe(false);
    expect(ok('date-time', '2020-02-01T24:30:00Z')).toBe(false);
    expect(ok('date-time', '2020-02-01T10:75:00Z')).toBe(false);
    expect(ok('date-time', '2020-02-01T10:00:00')).toBe(false);
  });
  it('a leap second is one in UTC: the SDK server refuses 23:59:60 at +02:00, and so does the answer check', async () => {
    expect((await checkElicitAnswer(schema('date-time') as never, { v: '2020-06-30T23:59:60+02:00' })).ok).toBe(false);
    expect((await checkElicitAnswer(schema('date-time') as never, { v: '2020-06-30T23:59:60Z' })).ok).toBe(true);
  });
  it('the message names the format', () => {
    expect(checkElicitContent(schema('date') as never, { v: '2020-13-45' })).toMatchObject({ ok: false, issues: [{ path: 'content.v', message: expect.stringContaining('date') }] });
  });
  it('a field named like an Object.prototype property is not a field of the schema (constructor, toString, hasOwnProperty)', () => {
    for (const k of ['constructor', 'toString', 'hasOwnProperty']) {
      // Before: `props[k]` found Object.prototype's, and the answer reached the server with that key in it.
      expect(checkElicitContent(schema('email') as never, { v: 'a@b.example', [k]: 'x' }), k).toMatchObject({ ok: false, issues: [{ path: `content.${k}`, message: 'is not a field of the requested schema' }] });
    }
  });
});

describe('elicitation content: lengths and field names', () => {
  const props = (p: Record<string, unknown>, required?: string[]) => ({ type: 'object', properties: p, ...(required ? { required } : {}) }) as never;
  it('a string length counts characters (code points), as JSON Schema and ajv do, not UTF-16 units (probe P)', async () => {
    // Before: '😀😀' was 4 units, refused by maxLength 3 ("must be at most 3 characters"); the server's ajv accepts it.
    expect(await checkElicitAnswer(props({ s: { type: 'string', maxLength: 3 } }), { s: '😀😀' })).toEqual({ ok: true, content: { s: '😀😀' } });
    expect(checkElicitContent(props({ s: { type: 'string', maxLength: 2 } }), { s: '😀😀' }).ok).toBe(true);
    expect(checkElicitContent(props({ s: { type: 'string', maxLength: 1 } }), { s: '😀😀' })).toMatchObject({ ok: false, issues: [{ path: 'content.s', message: 'must be at most 1 characters' }] });
    // Before: '😀' was 2 units and passed minLength 2; the server refuses it.
    expect(await checkElicitAnswer(props({ s: { type: 'string', minLength: 2 } }), { s: '😀' })).toEqual({ ok: false, issues: [{ path: 'content.s', message: 'must be at least 2 characters' }] });
  });
  it('a field named like a built-in object member (toString, constructor, __proto__, hasOwnProperty) keeps its default and is reported missing in plain words (probe P)', async () => {
    for (const k of ['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf']) {
      // Before: `k in {}` was true, so the default was dropped ({name: 'n'} only) …
      const withDefault = JSON.parse(JSON.stringify({ type: 'object', properties: { [k]: { type: 'string', default: 'd' }, name: { type: 'string', default: 'n' } } }));
      const given = await checkElicitAnswer(withDefault, {});
      expect(given.ok, k).toBe(true);
      expect(given.ok && JSON.stringify(given.content), k).toBe(JSON.stringify({ [k]: 'd', name: 'n' }));
      expect(given.ok && Object.hasOwn(given.content, k), k).toBe(true);
      // … and a missing required one was named only by ajv, in its words ("must have required property …").
      const required = JSON.parse(JSON.stringify({ type: 'object', properties: { [k]: { type: 'string' } }, required: [k] }));
      expect(await checkElicitAnswer(required, {}), k).toEqual({ ok: false, issues: [{ path: `content.${k}`, message: 'is required' }] });
      // Given, its value goes to the server.
      const answered = await checkElicitAnswer(required, JSON.parse(`{${JSON.stringify(k)}: "v"}`));
      expect(answered.ok && JSON.stringify(answered.content), k).toBe(JSON.stringify({ [k]: 'v' }));
    }
  });
});

describe('elicitation content: what the MCP SDK server itself checks', () => {
  const props = (p: Record<string, unknown>) => ({ type: 'object', properties: { f: p } }) as never;
  it('refuses what the schema refuses beyond the form keywords: exclusive bounds, multipleOf, pattern (probe B)', async () => {
    // Before: accepted here ({status: "ok"}), then refused by the server ("must be > 0"), and the answer was lost.
    for (const [p, bad, good] of [
      [{ type: 'number', exclusiveMinimum: 0 }, 0, 0.5],
      [{ type: 'number', exclusiveMaximum: 10 }, 10, 9],
      [{ type: 'integer', multipleOf: 5 }, 7, 10],
      [{ type: 'string', pattern: '^[0-9]+$' }, 'abc', '123'],
    ] as const) {
      expect(await checkElicitAnswer(props(p), { f: bad }), JSON.stringify(p)).toMatchObject({ ok: false, issues: [{ path: 'content.f' }] });
      expect(await checkElicitAnswer(props(p), { f: good }), JSON.stringify(p)).toMatchObject({ ok: true, content: { f: good } });
    }
  });
  it('lists every error of an answer in one refusal: the form checks and the whole schema, each problem once (probe)', async () => {
    const schema = {
      type: 'object',
      properties: {
        count: { type: 'integer', minimum: 0 },
        tags: { type: 'array', minItems: 1, items: { anyOf: [{ const: 'a' }, { const: 'b' }] } },
        ratio: { type: 'number', multipleOf: 0.5 },
        code: { type: 'string', maxLength: 5, pattern: '^[A-Z]{3}$' },
        name: { type: 'string' },
      },
      required: ['name'],
    } as never;
    // Before: the form checks' issues alone ("count must be an integer; tags must have at least 1 items"…), and the
    // pattern and multipleOf ones only from the next submit, once those were mended.
    const refused = await checkElicitAnswer(schema, { count: 1.5, tags: [], ratio: 0.3, code: 'abcdefg' });
    expect(refused).toEqual({
      ok: false,
      issues: [
        { path: 'content.count', message: 'must be an integer' },
        { path: 'content.tags', message: 'must have at least 1 items' },
        { path: 'content.code', message: 'must be at most 5 characters' },
        { path: 'content.name', message: 'is required' },
        { path: 'content.ratio', message: 'must be multiple of 0.5' },
        { path: 'content.code', message: 'must match pattern "^[A-Z]{3}$"' },
      ],
    });
    // One problem found by both (a list item not among the choices, a value that is no integer) is listed once.
    expect(await checkElicitAnswer(schema, { name: 'x', tags: ['a', 'z', 'y'], count: 'many' })).toEqual({
      ok: false,
      issues: [
        { path: 'content.tags', message: 'each must be one of a, b' },
        { path: 'content.count', message: 'must be an integer' },
      ],
    });
    expect(await checkElicitAnswer(schema, { name: 'x', count: 2, tags: ['a'], ratio: 1.5, code: 'ABC' })).toMatchObject({ ok: true });
  });
  it('a schema it cannot compile refuses nothing more than the form checks do', async () => {
    expect(await checkElicitAnswer(props({ type: 'string', $ref: '#/definitions/nowhere' }), { f: 'x' })).toMatchObject({ ok: true });
  });
});

describe("elicitation content: a server's pattern cannot stall the gateway", () => {
  const props = (p: Record<string, unknown>) => ({ type: 'object', properties: { f: p } }) as never;
  const timed = async (fn: () => Promise<unknown>) => {
    const t = performance.now();
    const result = await fn();
    return { result, ms: performance.now() - t };
  };
  it('runs a pattern in linear time (RE2): ^(a+)+$ against a default of many a\'s and a ! is refused at once (probe: a minute)', async () => {
    await checkElicitAnswer(props({ type: 'string', pattern: '^x$' }), { f: 'x' }); // loaded: the timing is the check's
    // Before: V8's backtracking engine, ~2^n steps (25 a's took seconds, 29 a minute), the event loop held meanwhile.
    const { result, ms } = await timed(() => checkElicitAnswer(props({ type: 'string', pattern: '^(a+)+$', default: `${'a'.repeat(25)}!` }), {}));
    expect(result).toEqual({ ok: false, issues: [{ path: 'content.f', message: 'must match pattern "^(a+)+$"' }] });
    expect(ms).toBeLessThan(1000);
    // It still matches what it should.
    expect(await checkElicitAnswer(props({ type: 'string', pattern: '^(a+)+$' }), { f: 'a'.repeat(5000) })).toMatchObject({ ok: true });
  });
  it('refuses, saying why, a pattern RE2 cannot run (a backreference, lookaround): never handed to the backtracking engine', async () => {
    for (const pattern of ['^(a)\\1$', '^(?=(a+)+$)', '(?<!x)a']) {
      const { result, ms } = await timed(() => checkElicitAnswer(props({ type: 'string', pattern }), { f: `${'a'.repeat(29)}!` }));
      expect(result, pattern).toEqual({ ok: false, issues: [{ path: 'content.f', message: expect.stringMatching(/^cannot be checked against the requested schema: its pattern cannot be run in linear time \(error parsing regexp: /) }] });
      expect(ms, pattern).toBeLessThan(1000);
    }
    // A field without a value has nothing to check: the pattern is not needed.
    expect(await checkElicitAnswer(props({ type: 'string', pattern: '(a)\\1' }), {})).toEqual({ ok: true, content: {} });
  });
  it('refuses a pattern too large to compile quickly, and one whose checks would take too long', async () => {
    const tooBig = '[a-z]{0,1000}'.repeat(16); // re2js compiles it in seconds
    expect(programBound(tooBig)).toBeGreaterThan(MAX_PATTERN_PROGRAM);
    expect(await checkElicitAnswer(props({ type: 'string', pattern: tooBig }), { f: 'abc' })).toEqual({
      ok: false,
      issues: [{ path: 'content.f', message: expect.stringMatching(/^cannot be checked against the requested schema: its pattern expands to about \d+ steps, more than 2000$/) }],
    });
    expect(await checkElicitAnswer(props({ type: 'string', pattern: 'a'.repeat(MAX_PATTERN_CHARS + 1) }), { f: 'abc' })).toMatchObject({ ok: false, issues: [{ message: expect.stringContaining('characters long') }] });
    // A Unicode class a thousand times over an accented value: re2js's slowest steps, ~3 s for 10,000 letters.
    const { result, ms } = await timed(() => checkElicitAnswer(props({ type: 'string', pattern: '\\p{L}{1000}' }), { f: 'é'.repeat(10_000) }));
    expect(result).toEqual({ ok: false, issues: [{ path: 'content.f', message: 'cannot be checked against the requested schema: checking it would take more than the gateway allows one answer' }] });
    expect(ms).toBeLessThan(1000);
    expect(await checkElicitAnswer(props({ type: 'string', pattern: '^\\p{L}{3}$' }), { f: 'éàü' })).toMatchObject({ ok: true });
  });
  it('reads the spellings of JavaScript patterns RE2 writes otherwise (\\uXXXX, \\u{…})', async () => {
    expect(toRe2Syntax('^\\u0041\\u{1F600}\\\\u0041$')).toBe('^\\x{0041}\\x{1F600}\\\\u0041$');
    expect(await checkElicitAnswer(props({ type: 'string', pattern: '^\\u0041\\u{1F600}$' }), { f: 'A😀' })).toMatchObject({ ok: true });
    expect(await checkElicitAnswer(props({ type: 'string', pattern: '^\\u0041$' }), { f: 'B' })).toMatchObject({ ok: false });
  });
  it('counts what a pattern compiles to before compiling it', () => {
    expect(programBound('abc')).toBe(3);
    expect(programBound('^[A-Z]{3}-\\d{2}$')).toBeLessThan(20);
    expect(programBound('[a-z]{0,1000}')).toBeGreaterThan(1000);
    expect(programBound('((a{10}){10}){10}')).toBeGreaterThan(1000);
  });
  it('does not compile a schema of more sub-schemas than the cap (ajv took seconds); the form checks still apply', async () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 5000; i++) properties[`f${i}`] = { type: 'string', minLength: 1, pattern: '^x', default: 'x' };
    const { result, ms } = await timed(() => checkElicitAnswer({ type: 'object', properties } as never, { f1: 'y' }));
    // Before: ajv compiled all 5,000 fields first (~6 s). The pattern is the whole-schema check's: not run here.
    expect(result).toMatchObject({ ok: true });
    expect(ms).toBeLessThan(1000);
    expect(MAX_SCHEMA_NODES).toBeLessThan(5000);
    expect(await checkElicitAnswer({ type: 'object', properties } as never, { f1: 5 })).toMatchObject({ ok: false, issues: [{ path: 'content.f1', message: 'must be a string' }] });
  });
  it('does not check content too large against the whole schema (a format such as regex over a server default of megabytes took seconds)', async () => {
    const big = '.'.repeat(4 * 1024 * 1024); // a server's default, within its message cap
    const { result, ms } = await timed(() => checkElicitAnswer(props({ type: 'string', format: 'regex', default: big }), {}));
    // Before: ajv's format check compiled the 4 MiB default as a regular expression, ~6 s; the server checks it.
    expect(result).toEqual({ ok: true, content: { f: big } });
    expect(ms).toBeLessThan(1000);
  });
});
