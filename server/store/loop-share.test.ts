import { describe, expect, it } from 'vitest';
import { LoopShare } from './loop-share';

const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    /* the synchronous work of a transaction */
  }
};

/** Counts the turns of the event loop (an immediate that queues itself again) until stopped. */
async function countTurns(): Promise<{ readonly turns: number; stop(): void }> {
  let turns = 0;
  let ticking = true;
  const tick = () => {
    turns++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  await new Promise((r) => setImmediate(r));
  return {
    get turns() {
      return turns;
    },
    stop: () => void (ticking = false),
  };
}

describe('LoopShare', () => {
  it('lets the loop turn once the store has run past its budget in one turn, one waiter per turn, in order', async () => {
    const share = new LoopShare(5);
    const loop = await countTurns();
    const seen: Array<{ i: number; turn: number }> = [];
    // Ten writes that settle together, 3 ms each: without the share all ten run in one turn of the loop (30 ms).
    await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const wait = share.turn();
        if (wait) await wait;
        seen.push({ i, turn: loop.turns });
        busy(3);
        share.done();
      }),
    );
    loop.stop();
    expect(seen.map((s) => s.i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // At most two writes (6 ms, past the 5 ms budget) ran in any one turn.
    const perTurn = new Map<number, number>();
    for (const s of seen) perTurn.set(s.turn, (perTurn.get(s.turn) ?? 0) + 1);
    expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(2);
    expect(share.queued).toBe(0);
  });

  it('a later turn runs as many waiters as fit in its budget, not one', async () => {
    const share = new LoopShare(5);
    const loop = await countTurns();
    const seen: number[] = [];
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        const wait = share.turn();
        if (wait) await wait;
        seen.push(loop.turns);
        busy(1);
        share.done();
      }),
    );
    loop.stop();
    const perTurn = new Map<number, number>();
    for (const t of seen) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
    const [first, ...later] = [...perTurn.values()];
    expect(first).toBeLessThanOrEqual(6);
    expect(Math.max(...later)).toBeGreaterThanOrEqual(3);
  });

  it('hands over at once while a turn is within its budget', () => {
    const share = new LoopShare(50);
    for (let i = 0; i < 5; i++) expect(share.turn()).toBeUndefined();
  });
});
