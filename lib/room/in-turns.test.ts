import { describe, expect, it } from 'vitest';
import { inTurns } from './in-turns';

describe('inTurns', () => {
  it('lets the event loop run between the steps and after the last', async () => {
    const log: string[] = [];
    let n = 0;
    const other = () => {
      log.push('loop');
      if (++n < 20) setImmediate(other);
    };
    setImmediate(other);
    await inTurns([() => log.push('a'), async () => log.push('b'), () => log.push('c')]);
    log.push('done');
    const at = (s: string) => log.indexOf(s);
    for (const [x, y] of [['a', 'b'], ['b', 'c'], ['c', 'done']] as const) expect(log.slice(at(x) + 1, at(y))).toContain('loop');
  });

  it('runs the steps in order, each after the one before settled', async () => {
    const log: string[] = [];
    await inTurns([async () => (await new Promise((r) => setTimeout(r, 5)), log.push('slow')), () => log.push('next')]);
    expect(log).toEqual(['slow', 'next']);
  });
});
