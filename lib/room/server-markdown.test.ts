// The room's server render of rich replies (components/transcript/markdown.tsx): each reply's Markdown renders in a
// task of its own, so a page of them does not hold the gateway's event loop in one piece (issue 24.2), and the HTML
// still comes whole — every reply in place, no fallback revealed later by a script.
import { createElement, Fragment } from 'react';
import { renderToPipeableStream } from 'react-dom/server';
import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';

/** Which turn of the event loop (counted by a chain of setImmediate) each reply rendered in. */
const renderedAt: number[] = [];
let tick = 0;
vi.mock('../../components/transcript/markdown-rich', () => ({
  default: ({ text }: { text: string }) => {
    renderedAt.push(tick);
    return createElement('div', { className: 'rich' }, text);
  },
}));

const { Markdown } = await import('../../components/transcript/markdown');

/** How many replies had rendered when React called the shell ready (and would send it). */
let renderedAtShell = -1;

function render(texts: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    let html = '';
    const out = new Writable({
      write(chunk, _enc, done) {
        html += String(chunk);
        done();
      },
    });
    const stream = renderToPipeableStream(createElement(Fragment, null, ...texts.map((text) => createElement(Markdown, { key: text, text }))), {
      onShellReady: () => {
        renderedAtShell = renderedAt.length;
        stream.pipe(out);
      },
      onShellError: reject,
      onError: reject,
    });
    out.on('finish', () => resolve(html));
  });
}

describe('rich replies in the server render', () => {
  it('renders each reply in a later task of its own, and the HTML whole with every reply in place', async () => {
    let counting = true;
    const count = () => setImmediate(() => ((tick += 1), counting && count()));
    count();
    try {
      await render(['# warm']); // the renderer's module loads with the first reply (a lazy import)
      renderedAt.length = 0;
      const texts = ['# one', '**two**', '- three', '`four`'];
      const html = await render(texts);
      expect(renderedAt).toHaveLength(texts.length);
      expect(new Set(renderedAt).size).toBe(texts.length);
      for (const t of texts) expect(html).toContain(`<div class="rich">${t.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</div>`);
      // The shell waited for the replies: nothing to send before them, no fallback swapped in later by a script ($RC).
      expect(renderedAtShell).toBe(texts.length);
      expect(html).not.toContain('$RC');
      expect(html).not.toContain('markdown-plain');
    } finally {
      counting = false;
    }
  });
});
