// Unit tests for merging live transcript rows into the paged history cache.
import { describe, expect, it } from 'vitest';
import type { TranscriptMessage } from '@/lib/trpc/types';
import { flattenHistory, mergeMessage, type HistoryData } from './use-transcript';

const msg = (id: number): TranscriptMessage => ({
  id,
  sessionKey: 'agent:main:main',
  role: 'user',
  kind: 'message',
  content: `m${id}`,
  createdAt: new Date(0).toISOString(),
  author: { type: 'user', id: 'user' },
});

describe('history merging', () => {
  const data: HistoryData = {
    pages: [
      { messages: [msg(5), msg(4)], next_cursor: 'c' },
      { messages: [msg(3), msg(2)], next_cursor: null },
    ],
    pageParams: [undefined, 'c'],
  };

  it('flattens newest-first pages oldest → newest', () => {
    expect(flattenHistory(data).map((m) => m.id)).toEqual([2, 3, 4, 5]);
  });

  it('adds a new row to the newest page once', () => {
    const merged = mergeMessage(data, msg(6));
    expect(merged.pages[0]!.messages.map((m) => m.id)).toEqual([6, 5, 4]);
    expect(mergeMessage(merged, msg(6))).toBe(merged);
    expect(mergeMessage(data, msg(3))).toBe(data);
  });

  it('starts a history when there was none', () => {
    expect(flattenHistory(mergeMessage(undefined, msg(1))).map((m) => m.id)).toEqual([1]);
  });
});
