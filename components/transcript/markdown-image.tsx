'use client';
// Images in model output: this origin's and data: images show inline; any other URL is a link, fetched only when clicked.
import type { ComponentProps } from 'react';

/** Where an image may load from without a click: a data: URL, a relative path, or (in the browser) this origin. */
export function isLocalImage(src: string): boolean {
  const s = src.trim();
  if (/^data:image\//i.test(s)) return true;
  // A relative path, not a protocol-relative `//host/…` or a `scheme:` URL.
  if (!/^[a-z][a-z0-9+.-]*:/i.test(s) && !s.startsWith('//') && !s.startsWith('\\\\')) return true;
  if (typeof window === 'undefined') return false;
  try {
    return new URL(s, window.location.href).origin === window.location.origin;
  } catch {
    return false;
  }
}

function hostOf(src: string): string {
  try {
    return new URL(src).host || src;
  } catch {
    return src;
  }
}

/**
 * A remote image would tell its server that this session was opened, with whatever the URL carries (a prompt-injected
 * model can put a secret there). It shows as a link instead: opening it is a person's choice, in a new tab, with no referrer.
 * (The page's CSP, img-src 'self' data:, refuses such an image anyway.)
 */
export function MarkdownImage({ src, alt, node: _node, ...rest }: ComponentProps<'img'> & { node?: unknown }) {
  if (typeof src !== 'string' || src === '') return null;
  if (isLocalImage(src)) {
    // eslint-disable-next-line @next/next/no-img-element -- model output, not a page asset
    return <img src={src} alt={alt ?? ''} {...rest} className="max-w-full rounded-md" />;
  }
  return (
    <a
      href={src}
      target="_blank"
      rel="noopener noreferrer nofollow"
      referrerPolicy="no-referrer"
      title={src}
      data-testid="remote-image"
      className="inline-flex items-center gap-1 rounded border border-dashed px-1.5 py-0.5 text-sm underline-offset-2 hover:underline"
    >
      {`Remote image${alt ? `: ${alt}` : ''} (${hostOf(src)}) — click to open`}
    </a>
  );
}
