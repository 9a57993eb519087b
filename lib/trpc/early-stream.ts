// The room's live stream, opened by the server-rendered page itself (an inline script, as the HTML is parsed) instead
// of after hydration, and adopted by the tRPC subscription link when it asks for the same stream: the stream's
// connection overlaps the page's scripts and hydration (issue 24 items 1–2, "interactive"). Events that arrive before
// the link adopts it are kept and handed over in order.

/** The tRPC endpoint, the browser's and the early stream's. */
export const TRPC_ENDPOINT = '/api/trpc';

/** The SSE events tRPC's stream consumer listens for (`sseStreamConsumer`), besides `message` and `error`. */
const TYPES = ['connected', 'serialized-error', 'ping', 'return', 'error', 'message'] as const;
/** Not adopted by then (the room never asked for it): closed. */
const ABANDON_MS = 30_000;

/** The URL tRPC's httpSubscriptionLink builds for `events.onEvent({ sessionKey })` (no lastEventId: a first connection). */
export function earlyStreamUrl(sessionKey: string): string {
  return `${TRPC_ENDPOINT}/events.onEvent?input=${encodeURIComponent(JSON.stringify({ sessionKey }))}`;
}

/** The inline script: opens the stream and keeps every event it gets until adopted (a string: it runs before any bundle). */
export function earlyStreamScript(url: string): string {
  return `(() => { try {
    const es = new EventSource(${JSON.stringify(url)});
    const buf = [];
    const rec = (e) => buf.push(e);
    for (const t of ${JSON.stringify(TYPES)}) es.addEventListener(t, rec);
    const early = (window.__earlyStream = { url: ${JSON.stringify(url)}, es, buf, rec });
    setTimeout(() => { if (window.__earlyStream === early) { es.close(); window.__earlyStream = undefined; } }, ${ABANDON_MS});
  } catch {} })();`;
}

interface EarlyStream {
  url: string;
  es: EventSource;
  buf: Event[];
  rec: (e: Event) => void;
}
type Listener = (e: Event) => void;
type Host = { __earlyStream?: EarlyStream; location?: { href: string } };

/** Same stream: the same path and the same input (absolute or relative URLs alike). */
function sameStream(a: string, b: string, base: string): boolean {
  try {
    const ua = new URL(a, base);
    const ub = new URL(b, base);
    const input = (u: URL) => JSON.stringify(JSON.parse(u.searchParams.get('input') ?? 'null'));
    return ua.pathname === ub.pathname && [...ua.searchParams.keys()].join() === [...ub.searchParams.keys()].join() && input(ua) === input(ub);
  } catch {
    return false;
  }
}

/**
 * An EventSource constructor for httpSubscriptionLink: the page's early stream when it is the one asked for (once),
 * else a new EventSource. A different stream asked for first closes the early one.
 */
export function adoptingEventSource(host: Host, Base: typeof EventSource): typeof EventSource {
  function EarlyOrNew(url: string | URL, init?: EventSourceInit): EventSource {
    const early = host.__earlyStream;
    if (early) {
      host.__earlyStream = undefined;
      if (sameStream(early.url, String(url), host.location?.href ?? 'http://localhost/')) return adopt(early);
      early.es.close();
    }
    return new Base(url, init);
  }
  return Object.assign(EarlyOrNew, { CONNECTING: 0, OPEN: 1, CLOSED: 2 }) as unknown as typeof EventSource;
}

/** The early stream behind the EventSource surface tRPC uses; what it got before is replayed once the consumer's listeners are on. */
function adopt({ es, buf, rec }: EarlyStream): EventSource {
  const listeners = new Map<string, Listener[]>();
  const view = {
    CONNECTING: 0,
    OPEN: 1,
    CLOSED: 2,
    get readyState() {
      return es.readyState;
    },
    get url() {
      return es.url;
    },
    withCredentials: es.withCredentials,
    close: () => es.close(),
    addEventListener(type: string, fn: Listener) {
      listeners.set(type, [...(listeners.get(type) ?? []), fn]);
      es.addEventListener(type, fn);
    },
    removeEventListener(type: string, fn: Listener) {
      listeners.set(type, (listeners.get(type) ?? []).filter((f) => f !== fn));
      es.removeEventListener(type, fn);
    },
  };
  // The consumer adds its listeners synchronously after construction; no event task can run before this microtask,
  // so what was kept comes first and in order, and everything after reaches the listeners directly.
  queueMicrotask(() => {
    for (const t of TYPES) es.removeEventListener(t, rec);
    for (const e of buf.splice(0)) for (const fn of listeners.get(e.type) ?? []) fn.call(view, e);
  });
  return view as unknown as EventSource;
}
