// splitText: a long message cut into posts a platform takes, at the best boundary, losing nothing but the whitespace at the cuts.
import { describe, expect, it } from 'vitest';
import { splitText } from './split-text';

const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

describe('splitText', () => {
  it('leaves a message that fits alone', () => {
    expect(splitText('short', 10)).toEqual(['short']);
    expect(splitText('x'.repeat(10), 10)).toEqual(['x'.repeat(10)]);
  });

  it('cuts at a paragraph, else a line, else a space, each part within the limit, nothing lost', () => {
    const text = `${'a'.repeat(60)}\n\n${'b'.repeat(30)}\n${'c '.repeat(40)}`;
    const parts = splitText(text, 80);
    expect(parts[0]).toBe('a'.repeat(60));
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(80);
    expect(squash(parts.join(' '))).toBe(squash(text));
  });

  it('cuts a word with no space in it anywhere, but never between the halves of a surrogate pair', () => {
    const emoji = '😀'.repeat(10); // 20 UTF-16 units
    const parts = splitText(emoji, 7);
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(7);
      expect(p).toBe([...p].join('')); // whole characters
      expect(/[\ud800-\udbff]$/.test(p)).toBe(false);
    }
    expect(parts.join('')).toBe(emoji);
  });
});
