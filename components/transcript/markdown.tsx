'use client';
// Assistant text: plain lines as text; anything Markdown could format through the streamdown renderer, whose code
// (parser, highlighter) loads on first use, so opening the room does not wait for it.
import { looksLikeMarkdown } from '@/lib/room/markdown-hint';
import { createContext, lazy, Suspense, use, useSyncExternalStore } from 'react';

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

/**
 * True around transcript rows the page's server render leaves as plain text: those above the first screen. Parsing
 * Markdown is most of a room's server render (1–6 ms a reply, on the gateway's event loop); those rows are offscreen at
 * first paint and turn rich right after hydration, without a parse on the server.
 */
export const ServerPlainMarkdown = createContext(false);

const noSubscription = () => () => {};
/** False in the server render and while hydrating it, true from then on (and in every render after hydration). */
const useHydrated = () =>
  useSyncExternalStore(
    noSubscription,
    () => true,
    () => false,
  );

function Plain({ text }: { text: string }) {
  return <p className="markdown-plain whitespace-pre-wrap">{text}</p>;
}

export function Markdown({ text, streaming = false }: { text: string; streaming?: boolean }) {
  const serverPlain = use(ServerPlainMarkdown);
  const hydrated = useHydrated();
  if (!looksLikeMarkdown(text) || (serverPlain && !hydrated)) return <Plain text={text} />;
  return (
    <Suspense fallback={<Plain text={text} />}>
      <MarkdownRich text={text} streaming={streaming} />
    </Suspense>
  );
}
