// The board's first paint: the head of a long group, every item once whole, a short group whole at once.
import { describe, expect, it } from 'vitest';
import { FIRST_PAINT_ITEMS, firstPaint } from './board-view';

describe('firstPaint', () => {
  const items = Array.from({ length: 50 }, (_, i) => i);
  it('shows a screenful of a long group first, then all of it', () => {
    expect(firstPaint(items, false)).toEqual(items.slice(0, FIRST_PAINT_ITEMS));
    expect(FIRST_PAINT_ITEMS).toBeLessThan(items.length);
    expect(firstPaint(items, true)).toBe(items);
  });
  it('shows a short group whole at once', () => {
    expect(firstPaint(items.slice(0, 3), false)).toEqual([0, 1, 2]);
  });
});
