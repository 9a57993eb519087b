// Which texts skip the Markdown parser: only those with nothing it could format.
import { describe, expect, it } from 'vitest';
import { looksLikeMarkdown } from './markdown-hint';

describe('looksLikeMarkdown', () => {
  it('sends anything with Markdown syntax to the parser', () => {
    for (const t of ['**bold**', 'a _b_', '`code`', '# Title', '- item', '1. first', '| a | b |', '> quote', 'see https://x.y', 'a\n\nb', '```js\nx', '~~gone~~', '[link](u)', 'mail a@b.c']) {
      expect(looksLikeMarkdown(t), t).toBe(true);
    }
  });
  it('leaves plain lines plain (HTML included: plain text never inserts it)', () => {
    for (const t of ['echo: hello there', 'seeded row 42', 'a line\nanother line', '<script>x</script>', 'costs 3.50 - cheap']) {
      expect(looksLikeMarkdown(t), t).toBe(false);
    }
  });
});
