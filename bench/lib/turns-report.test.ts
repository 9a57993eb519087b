// bench/turns.ts's rows in BENCHMARKS.md's Summary table: appended once, replaced on the next run, other rows kept.
import { describe, expect, it } from 'vitest';
import { putSummaryRows } from './turns-report';

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
