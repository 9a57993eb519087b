'use client';
// Assistant text: plain lines as text; anything Markdown could format through the streamdown renderer, whose code
// (parser, highlighter) loads on first use, so opening the room does not wait for it.
import { nextTask } from '@/lib/room/in-turns';
import { looksLikeMarkdown } from '@/lib/room/markdown-hint';
import { createContext, lazy, Suspense, use, useSyncExternalStore, type ReactNode } from 'react';

type RichModule = typeof import('./markdown-rich');

/** The wait before loading the renderer again after a failed load: 1 s, doubling up to 10 s. */
const retryDelay = (failures: number) => Math.min(1000 * 2 ** (failures - 1), 10_000);

let loading: Promise<RichModule> | undefined;

/**
 * The renderer's code, loaded once. In the browser a failed load (the connection dropped while the chunk came: the
 * server restarting, a network blip) is dropped and tried again after a backoff until it comes, so the promise never
 * rejects: the preload raises no uncaught error, and React.lazy, which keeps a rejected load for good (the reply would
 * throw, or stay plain, until the tab reloads), only ever sees the renderer. Meanwhile a reply shows its plain text (the
 * Suspense fallback) and turns rich once the code is in.
 */
async function loadUntilLoaded(): Promise<RichModule> {
  for (let failures = 1; ; failures++) {
    try {
      return await import('./markdown-rich');
    } catch (error) {
      // The bundle runtime forgets a failed chunk, so the next import() fetches it again.
      if (failures === 1) console.warn('The Markdown renderer did not load; trying again.', error);
      await new Promise((resolve) => window.setTimeout(resolve, retryDelay(failures)));
    }
  }
}

// On the server the renderer is in the bundle: its import does not fail for want of a connection.
const load = () => (loading ??= typeof window === 'undefined' ? import('./markdown-rich') : loadUntilLoaded());
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

/**
 * The server render's turns for rich replies. Each reply's parse (1–6 ms) is a piece of the page's render; in one task
 * with the rest, a page with six rich replies held the gateway's event loop for ~21 ms while runs streamed (issue 24.2,
 * bench/page-render.ts). So on the server each rich reply waits for a turn of the loop of its own, and React renders it
 * when pinged, in a later task. It waits outside any Suspense boundary: the page's shell waits with it, so the HTML
 * still comes whole with every reply in place (a boundary would send a fallback and reveal the reply later, which
 * React throttles to 300 ms after the first paint). Turns are chained (each two `setImmediate` hops after the one
 * before: React's own retry is one hop after the ping, so two replies never land in one task). A reply's turn is kept
 * by its props object, which React's retry of a suspended component renders again, so a retry takes no second turn.
 */
let lastTurn: Promise<void> = Promise.resolve();
const turnOf = new WeakMap<object, Promise<void>>();

function ServerTurn(props: { children: ReactNode }) {
  if (typeof window === 'undefined') {
    let turn = turnOf.get(props);
    if (!turn) turnOf.set(props, (turn = lastTurn = lastTurn.then(nextTask).then(nextTask)));
    use(turn);
  }
  return props.children;
}

function Plain({ text }: { text: string }) {
  return <p className="markdown-plain whitespace-pre-wrap">{text}</p>;
}

export function Markdown({ text, streaming = false }: { text: string; streaming?: boolean }) {
  const serverPlain = use(ServerPlainMarkdown);
  const hydrated = useHydrated();
  if (!looksLikeMarkdown(text) || (serverPlain && !hydrated)) return <Plain text={text} />;
  return (
    <ServerTurn>
      <Suspense fallback={<Plain text={text} />}>
        <MarkdownRich text={text} streaming={streaming} />
      </Suspense>
    </ServerTurn>
  );
}
