// Image URLs in model output as the room renders them (components/transcript/markdown-rich.tsx): a protocol-relative
// `//host/x.png` is another origin (a link to click, never a same-origin `/x.png` shown inline), a data: image shows inline,
// a data: URL that is not an image does not.
import { createElement } from 'react';
import { renderToString } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import MarkdownRich from '../../components/transcript/markdown-rich';

const html = (text: string) => renderToString(createElement(MarkdownRich, { text }));

describe('image URLs in model output', () => {
  it('a protocol-relative image is a remote image (a link to https://host), not this origin\'s path', () => {
    const out = html('![chart](//images.example/x.png)');
    expect(out).toContain('href="https://images.example/x.png"');
    expect(out).toContain('Remote image: chart (images.example)');
    expect(out).not.toMatch(/<img[^>]*src="\/x\.png"/);
    // Backslashes are slashes to a browser's URL parser.
    expect(html('![b](/\\images.example/y.png)')).toContain('href="https://images.example/y.png"');
  });

  it('a data: image shows inline; a data: URL of another type stays blocked', () => {
    const png = 'data:image/png;base64,iVBORw0KGgo=';
    expect(html(`![dot](${png})`)).toContain(`<img src="${png}" alt="dot"`);
    const page = html('![p](data:text/html;base64,PHNjcmlwdD4=)');
    expect(page).not.toContain('<img');
    expect(page).toContain('Image blocked');
  });

  it('this origin\'s images still show inline', () => {
    expect(html('![logo](/logo.svg)')).toContain('<img src="/logo.svg" alt="logo"');
  });

  it('this origin\'s endpoints are links, never images: an <img> of an event stream held a connection open for good', () => {
    for (const src of ['/api/gateway/events?sessionKey=agent:main:main&n=1', 'api/gateway/events', '/API/x.png', '/%61pi/gateway/events.png', '/mcp', '/a2a/main/x.svg', '/icon?x=.png', '/_next/image?url=%2Ficon-192.png']) {
      const out = html(`![s](${src})`);
      expect(out, src).not.toContain('<img');
      expect(out, src).toMatch(/Remote image: s|Image blocked: s/);
    }
    expect(html('![i](/icons/a.PNG?v=2)')).toContain('<img src="/icons/a.PNG?v=2"');
  });
});
