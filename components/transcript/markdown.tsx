'use client';
// Assistant text: plain lines as text; anything Markdown could format through the streamdown renderer, whose code
// (parser, highlighter) loads on first use, so opening the room does not wait for it.
import { looksLikeMarkdown } from '@/lib/room/markdown-hint';
import { lazy, Suspense } from 'react';

const MarkdownRich = lazy(() => import('./markdown-rich'));

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
