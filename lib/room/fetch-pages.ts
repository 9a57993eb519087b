// Walk a cursor-paged list (chat.history, approvals.history) to its end, for the room's exports.

/** Every item of every page, in page order, until `next_cursor` runs out (bounded at 10,000 pages). */
export async function fetchAllPages<P extends { next_cursor: string | null }, T>(fetchPage: (cursor: string | undefined) => Promise<P>, items: (page: P) => T[]): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  for (let guard = 0; guard < 10_000; guard++) {
    const page = await fetchPage(cursor);
    out.push(...items(page));
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
  }
  return out;
}
