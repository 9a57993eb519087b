// The room's hydration gate: writes wait until every deferred part has hydrated, then run in order, and later ones at once.
import { describe, expect, it } from 'vitest';
import { HydrationGate } from './hydration-gate';

describe('HydrationGate', () => {
  it('holds writes until every part has hydrated, then runs them in order', () => {
    const gate = new HydrationGate(['sidebar', 'transcript'] as const);
    const ran: number[] = [];
    gate.run(() => ran.push(1));
    gate.run(() => ran.push(2));
    gate.hydrated('transcript');
    gate.hydrated('transcript'); // twice (a remount) is still one part
    expect(ran).toEqual([]);
    expect(gate.open).toBe(false);
    gate.hydrated('sidebar');
    expect(ran).toEqual([1, 2]);
    gate.run(() => ran.push(3));
    expect(ran).toEqual([1, 2, 3]);
  });

  it('is open from the start without parts, and stays open when a part mounts again', () => {
    const gate = new HydrationGate<string>([]);
    const ran: string[] = [];
    gate.run(() => ran.push('a'));
    gate.hydrated('x');
    gate.run(() => ran.push('b'));
    expect(ran).toEqual(['a', 'b']);
  });
});
