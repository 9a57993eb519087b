// framesIn (bench/lib/long-tasks.ts): a CPU profile's samples between two instants of the monotonic clock, by frame.
import { describe, expect, it } from 'vitest';
import { framesIn } from './long-tasks';

const node = (id: number, functionName: string, url: string, children: number[] = []) => ({ id, callFrame: { functionName, url, lineNumber: 1 }, children });

describe('framesIn', () => {
  it('sums the samples inside the span by the frames on their stacks, and tells idle time apart', () => {
    const profile = {
      startTime: 1_000_000,
      nodes: [node(1, '(root)', '', [2, 3, 5]), node(2, 'render', 'file:///app/node_modules/next/x.js', [4]), node(3, '(idle)', ''), node(4, 'parse', 'file:///app/server/store/y.ts'), node(5, '(garbage collector)', '')],
      // 1 ms apart from 1,001,000: idle, render>parse ×2, render, GC, idle
      samples: [3, 4, 4, 2, 5, 3],
      timeDeltas: [1000, 1000, 1000, 1000, 1000, 1000],
    };
    const inSpan = framesIn(profile);
    const all = inSpan(1_000_000, 1_007_000);
    expect(all.sampledUs).toBe(6000);
    expect(all.idleUs).toBe(2000);
    expect(Object.fromEntries(all.frames)).toEqual({ 'render nm/next/x.js:1': 3000, 'parse server/store/y.ts:1': 2000, '(garbage collector)': 1000 });
    // Only the samples taken within [from, to]: the first parse sample was taken at 1,002,000.
    const part = inSpan(1_002_500, 1_004_000);
    expect(Object.fromEntries(part.frames)).toEqual({ 'render nm/next/x.js:1': 2000, 'parse server/store/y.ts:1': 1000 });
  });
});
