// A folded delta's time (server/store/event-fold.ts): stored as milliseconds after the folded row's first time when
// that gives the string back exactly, else as the string — worked out by hand for times in the same hour (no Date per
// delta); either way every delta reads back with the very time string it was written with.
import { describe, expect, it } from 'vitest';
import { expandRow, foldSteps, wholeRunLog } from './event-fold';

type Ev = { runId: string; seq: number; stream: string; ts: string; sessionKey: string; data: unknown };

/** A run: start, one delta per time in `times`, end; folded after the fact; its deltas read back from the folded row. */
function roundTrip(times: string[]) {
  const ev: Ev[] = [{ runId: 'r', seq: 1, stream: 'lifecycle', ts: times[0]!, sessionKey: 'agent:main:t', data: { phase: 'start' } }];
  for (const ts of times) ev.push({ runId: 'r', seq: ev.length + 1, stream: 'assistant', ts, sessionKey: 'agent:main:t', data: { delta: `d${ev.length}` } });
  ev.push({ runId: 'r', seq: ev.length + 1, stream: 'lifecycle', ts: times[times.length - 1]!, sessionKey: 'agent:main:t', data: { phase: 'end' } });
  const rows = wholeRunLog('r', ev, ev.map((_, i) => ({ id: 100 + i })))!;
  const [step] = foldSteps(rows);
  expect(step).toBeDefined();
  const folded = { ...rows[1]!, data: step!.data, fold_id: step!.last.id };
  return { stored: (JSON.parse(step!.data) as Array<[number, number | string, string]>).map((e) => e[1]), read: expandRow(folded).map((r) => r.ts) };
}

describe('folded delta times', () => {
  it('keeps times of one hour as ms offsets and reads each back as written', () => {
    const times = ['2026-11-27T10:00:00.000Z', '2026-11-27T10:00:00.007Z', '2026-11-27T10:00:09.990Z', '2026-11-27T10:07:59.999Z', '2026-11-27T10:59:59.999Z', '2026-11-27T10:59:59.999Z'];
    const { stored, read } = roundTrip(times);
    expect(read).toEqual(times);
    expect(stored).toEqual([0, 7, 9990, 479_999, 3_599_999, 3_599_999]);
  });

  it('reads back times across an hour, a day and a year, and times before the first', () => {
    const times = ['2026-12-31T23:59:59.990Z', '2027-01-01T00:00:00.010Z', '2027-01-01T01:00:00.000Z', '2026-12-31T23:59:59.001Z', '2026-12-31T22:00:00.000Z'];
    const { stored, read } = roundTrip(times);
    expect(read).toEqual(times);
    expect(stored).toEqual([0, 20, 3_600_010, -989, -7_199_990]);
  });

  it('keeps as strings the times an offset would not give back, and reads them back unchanged', () => {
    const times = ['2026-11-27T10:00:00.000Z', '2026-11-27T10:00:00.0100Z', '2026-11-27T10:00:01Z', '2026-11-27T11:00:00.000+01:00', '2026-11-27T10:61:00.000Z', 'not a time', '2026-11-27T10:00:02.000Z'];
    const { stored, read } = roundTrip(times);
    expect(read).toEqual(times);
    expect(stored).toEqual([0, '2026-11-27T10:00:00.0100Z', '2026-11-27T10:00:01Z', '2026-11-27T11:00:00.000+01:00', '2026-11-27T10:61:00.000Z', 'not a time', 2000]);
  });

  it('keeps every time as a string when the first is not a time', () => {
    const times = ['2026-13-40T10:00:00.000Z', '2026-13-40T10:00:00.005Z', '2026-11-27T10:00:00.005Z'];
    const { stored, read } = roundTrip(times);
    expect(read).toEqual(times);
    expect(stored).toEqual([0, '2026-13-40T10:00:00.005Z', '2026-11-27T10:00:00.005Z']);
  });

  it('reads back exactly after a first time that parses to another day (T24:00, 30 February)', () => {
    for (const times of [
      ['2026-11-27T24:00:00.000Z', '2026-11-28T00:00:00.005Z', '2026-11-27T24:00:00.007Z', '2026-11-28T00:59:00.000Z'],
      ['2026-02-30T10:00:00.000Z', '2026-03-02T10:00:00.005Z', '2026-02-30T10:00:00.009Z'],
    ]) {
      const { stored, read } = roundTrip(times);
      expect(read).toEqual(times);
      // The normalized times are offsets (Date gives them back), the others are kept as written.
      expect(stored.filter((s) => typeof s === 'string')).toEqual(times.filter((t, i) => i > 0 && t.startsWith(times[0]!.slice(0, 11))));
    }
  });
});

describe('a whole run log in hand', () => {
  // `wholeRunLog` gives a plain delta's text without writing its data as JSON; the folds must be those of the same
  // rows as the store gives them back (data as JSON text), for every shape of data that JSON writes alike or not.
  const ts = '2026-11-27T10:00:00.000Z';
  class Delta {
    constructor(readonly delta: string) {}
  }
  const shapes: unknown[] = [
    { delta: 'a' },
    { delta: 'b', extra: undefined },
    { delta: 'c', extra: 1 },
    { delta: 5 },
    { text: 'd' },
    Object.assign(Object.create(null), { delta: 'e' }),
    new Delta('f'),
    { delta: 'g' },
    { delta: '' },
    { delta: 'h', toJSON: () => ({ delta: 'x' }) },
    { delta: 'i' },
    { delta: 'j' },
  ];
  it('folds as the same rows read back from the store do', () => {
    const ev: Ev[] = [{ runId: 'r', seq: 1, stream: 'lifecycle', ts, sessionKey: 'k', data: { phase: 'start' } }];
    for (const data of shapes) ev.push({ runId: 'r', seq: ev.length + 1, stream: 'assistant', ts, sessionKey: 'k', data });
    ev.push({ runId: 'r', seq: ev.length + 1, stream: 'tool', ts, sessionKey: 'k', data: { delta: 'not text' } });
    ev.push({ runId: 'r', seq: ev.length + 1, stream: 'assistant', ts, sessionKey: 'k', data: { delta: 'k' } });
    ev.push({ runId: 'r', seq: ev.length + 1, stream: 'assistant', ts, sessionKey: 'k', data: { delta: 'l' } });
    ev.push({ runId: 'r', seq: ev.length + 1, stream: 'lifecycle', ts, sessionKey: 'k', data: { phase: 'end' } });
    const inHand = wholeRunLog('r', ev, ev.map((_, i) => ({ id: 100 + i })))!;
    const stored = ev.map((e, i) => ({ id: 100 + i, run_id: e.runId, seq: e.seq, stream: e.stream, ts: e.ts, session_key: e.sessionKey, data: JSON.stringify(e.data), fold_id: null }));
    const steps = foldSteps(inHand);
    expect(steps).toEqual(foldSteps(stored));
    // Folded: a–b (`extra: undefined` is not written); e–j, whatever the object, as JSON writes them (h's toJSON
    // writes `{"delta":"x"}`); k–l.
    expect(steps.map((s) => (JSON.parse(s.data) as Array<[number, number, string]>).map((e) => e[2]).join(''))).toEqual(['ab', 'efgxij', 'kl']);
    // The plain deltas were not written as JSON to be parsed back.
    expect(inHand.filter((r) => r.data === '').map((r) => r.delta)).toEqual(['a', 'b', 'g', '', 'i', 'j', 'k', 'l']);
  });
});
