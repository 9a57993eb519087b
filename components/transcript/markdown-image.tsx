'use client';
// Images in model output: this origin's image files and data: images show inline; any other URL is a link, fetched only when clicked.
import type { ComponentProps } from 'react';

/** An image file's name: what a same-origin path must end in to load without a click. */
const IMAGE_FILE = /\.(?:png|jpe?g|gif|webp|avif|svg|ico|bmp)$/;
/** This origin's endpoints (the API, its event streams, MCP, A2A): never an image, whatever the path ends in. */
const ENDPOINT = /^\/(?:api|mcp|a2a|login|logout)(?:\/|$)/;

/**
 * Where an image may load from without a click: a data: image, or this origin's image file (a path ending in an image
 * file's extension, outside the API). Any other same-origin path is a link: an `<img>` of `/api/gateway/events…` held
 * one of the browser's six connections to this origin open for good, and ten of them stalled the room's requests.
 */
export function isLocalImage(src: string): boolean {
  const s = src.trim();
  if (/^data:image\//i.test(s)) return true;
  const base = typeof window === 'undefined' ? 'http://room.invalid/' : window.location.href;
  try {
    const url = new URL(s, base);
    if (url.origin !== new URL(base).origin) return false;
    let path: string;
    try {
      path = decodeURIComponent(url.pathname).toLowerCase();
    } catch {
      return false;
    }
    return IMAGE_FILE.test(path) && !ENDPOINT.test(path) && !path.includes('\\');
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
