// What the agent board renders of a group: its head on the first paint (about a screenful), every item once whole.

/** Items of each group on the board's first paint: the panel shows about a dozen cards, four groups deep. */
export const FIRST_PAINT_ITEMS = 8;

export function firstPaint<T>(items: T[], whole: boolean): T[] {
  return whole || items.length <= FIRST_PAINT_ITEMS ? items : items.slice(0, FIRST_PAINT_ITEMS);
}
