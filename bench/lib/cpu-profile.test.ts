// The shared CPU-profile reading of bench/profile-*.ts: self time per node, by function and area, and the table lines.
import { describe, expect, it } from 'vitest';
import { byFunctionAndArea, type Profile, selfTimes, topLines } from './cpu-profile';

const profile: Profile = {
  nodes: [
    { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: 0 }, children: [2, 3] },
    { id: 2, callFrame: { functionName: 'parse', url: 'file:///x/node_modules/zod/lib/index.js', lineNumber: 10 } },
    { id: 3, callFrame: { functionName: 'append', url: 'file:///x/server/store/messages.ts', lineNumber: 5 } },
  ],
  samples: [2, 3, 2, 1],
  timeDeltas: [1000, 3000, 2000, 4000],
};

describe('cpu-profile', () => {
  it('adds each sample to its node and areas by package or directory', () => {
    const t = selfTimes(profile);
    expect(t.total).toBe(10_000);
    expect(t.self.get(2)).toBe(3000);
    const { fn, area } = byFunctionAndArea(t, (url) => url.replace(/^file:\/\//, '').replace(/.*node_modules\//, 'nm/').replace(/.*\/(server|bench)\//, '$1/'));
    expect(fn.get('parse nm/zod/lib/index.js:10')).toBe(3000);
    expect(area.get('zod')).toBe(3000);
    expect(area.get('server/store')).toBe(3000);
    expect(area.get('(root)')).toBe(4000);
    expect(topLines(area, t.total, 1)).toEqual([' 40.0%       4 ms  (root)']);
  });
});
