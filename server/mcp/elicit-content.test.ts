// An elicitation form's answer checked against the server's requestedSchema (CONTRACT §5): formats name real values.
import { describe, expect, it } from 'vitest';
import { checkElicitAnswer, checkElicitContent } from './elicit-content';

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
  it('a schema it cannot compile refuses nothing more than the form checks do', async () => {
    expect(await checkElicitAnswer(props({ type: 'string', pattern: '([' }), { f: 'x' })).toMatchObject({ ok: true });
  });
});
