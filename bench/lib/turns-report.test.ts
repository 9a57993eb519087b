// bench/turns.ts's rows in BENCHMARKS.md's Summary table: appended once, replaced on the next run, other rows kept.
import { describe, expect, it } from 'vitest';
import { putSummaryRows, renderTurns, type TurnsResults } from './turns-report';

const doc = ['# Benchmarks', '', '## Summary', '', '| metric | target |', '| --- | --- |', '| turn | 2 ms |', '', '## Details', 'text'].join('\n');

describe('putSummaryRows', () => {
  it('appends its rows to the Summary table and replaces them on the next run', () => {
    const once = putSummaryRows(doc, ['| a (turns.ts) | 1 |']);
    expect(once).toContain('| turn | 2 ms |\n| a (turns.ts) | 1 |\n\n## Details');
    const twice = putSummaryRows(once, ['| a (turns.ts) | 2 |', '| b (turns.ts) | 3 |']);
    expect(twice).toContain('| turn | 2 ms |\n| a (turns.ts) | 2 |\n| b (turns.ts) | 3 |\n\n## Details');
    expect(twice).not.toContain('| a (turns.ts) | 1 |');
  });

  it('leaves a document without a Summary table alone', () => {
    expect(putSummaryRows('# x\n\ntext\n', ['| a (turns.ts) | 1 |'])).toBe('# x\n\ntext\n');
  });
});

describe('renderTurns', () => {
  it('reports RSS after the load as read 1 s after it, with the reading 10 s after it beside, and judges the first', () => {
    const r: TurnsResults = {
      date: '2026-11-27T06:13:00.000Z',
      load: { begin: '0.1 / 0.6 / 0.7', during: ['steer: 0.4 / 0.6 / 0.7'] },
      settings: { turns: 1, warmup: 0, concRounds: 1, inbound: 0, steer: 0, starts: 0, capSeconds: 0, pgTurns: 0 },
      afterLoadRssKb: 214 * 1024,
      afterLoadSettledRssKb: 155 * 1024,
      errors: {},
    };
    const row = renderTurns(r, { clkTck: 100 }).split('\n').find((l) => l.startsWith('| 24.5 RSS after the load'));
    expect(row).toContain('1 s after it | ≤ 200 MB | 214 MB (10 s after it: 155 MB)');
    expect(row).toMatch(/\| not met \|$/);
    const without = renderTurns({ ...r, afterLoadSettledRssKb: undefined }, { clkTck: 100 }).split('\n').find((l) => l.startsWith('| 24.5 RSS after the load'));
    expect(without).not.toContain('10 s after it:');
  });
});
