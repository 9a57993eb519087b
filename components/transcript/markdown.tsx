'use client';
// Assistant text: plain lines as text; anything Markdown could format through the streamdown renderer, whose code
// (parser, highlighter) loads on first use, so opening the room does not wait for it.
import { looksLikeMarkdown } from '@/lib/room/markdown-hint';
import { lazy, Suspense } from 'react';

let loading: Promise<typeof import('./markdown-rich')> | undefined;
const load = () => (loading ??= import('./markdown-rich'));
const MarkdownRich = lazy(load);

/**
 * Fetches the renderer when the browser is next idle, so the first Markdown reply rarely waits for it (and does not
 * swap in late). The room calls it once its live stream is up: parsing ~700 KB of parser and highlighter is then off
 * the path to an interactive room.
 */
export function preloadMarkdown() {
  const idle = window.requestIdleCallback ?? ((fn: () => void) => window.setTimeout(fn, 500));
  idle(() => void load());
}

function Plain({ text }: { text: string }) {
  return <p className="markdown-plain whitespace-pre-wrap">{text}</p>;
}

export function Markdown({ text, streaming = false }: { text: string; streaming?: boolean }) {
  if (!looksLikeMarkdown(text)) return <Plain text={text} />;
  return (
    <Suspense fallback={<Plain text={text} />}>
      <MarkdownRich text={text} streaming={streaming} />
    </Suspense>
  );
}
