// The bench stores' Zipf words: each source is seeded on its own, so bench:room and bench:scale write the same text.
import { describe, expect, it } from 'vitest';
import { word, zipfWords } from './zipf-words';

describe('zipf-words', () => {
  it('two sources of one seed draw the same words; common words come first', () => {
    const a = zipfWords(42);
    const b = zipfWords(42);
    const drawn = Array.from({ length: 2000 }, a.zipfWord);
    expect(Array.from({ length: 2000 }, b.zipfWord)).toEqual(drawn);
    expect(word(0)).toBe('kakakaka');
    expect(drawn.filter((w) => w === word(0)).length).toBeGreaterThan(drawn.filter((w) => w === word(999)).length);
    expect(a.sentence(5).split(' ')).toHaveLength(5);
  });
});
