// Which tool call in flight a server's `elicitation/create` belongs to: exactly, over streamable HTTP (the call's own
// response stream carried it); otherwise only when the calls in flight are one session's, so a question never reaches another session.
import { createParser } from 'eventsource-parser';
import type { McpCallInfo } from './call-info';

type Id = string | number;

/**
 * One client's links from a server request to the tool call it came during (JSON-RPC ids start again with each
 * connection, so there is one of these per connection attempt). Over streamable HTTP a server asks during a call on
 * that call's own response stream (the SDK server's `relatedRequestId`): `linkingFetch` reads which of our requests a
 * server request came in the response to, `sent` which call each of our `tools/call` requests is.
 */
export class WireLinks {
  /** The params object each call hands the SDK, and that call: the SDK sends it as it is, under the request's id. */
  private readonly byParams = new WeakMap<object, McpCallInfo>();
  /** Our `tools/call` request ids and their calls (a call made again after an authorization has several). */
  private readonly byRequest = new Map<Id, McpCallInfo>();
  /** A server request's id and the id of our request on whose response stream it came. */
  private readonly carriedBy = new Map<Id, Id>();

  /** `params` will be sent for `call`. */
  expect(params: object, call: McpCallInfo): void {
    this.byParams.set(params, call);
  }

  /** A message we send (the transport's send, called by the SDK with the request and its id). */
  sent(message: unknown): void {
    const m = message as { method?: unknown; id?: unknown; params?: unknown };
    if (m?.method !== 'tools/call' || (typeof m.id !== 'string' && typeof m.id !== 'number') || !m.params || typeof m.params !== 'object') return;
    const call = this.byParams.get(m.params);
    if (call) this.byRequest.set(m.id, call);
  }

  /** A server request `serverId` came on the response stream of our request `ours`. */
  carried(serverId: Id, ours: Id): void {
    this.carriedBy.set(serverId, ours);
    // Those of a call made with no caller are never forgotten: the oldest go past a bound.
    if (this.carriedBy.size > 1024) this.carriedBy.delete(this.carriedBy.keys().next().value!);
  }

  /** The call whose response stream carried server request `serverId`, if known. */
  callFor(serverId: Id): McpCallInfo | undefined {
    const ours = this.carriedBy.get(serverId);
    return ours === undefined ? undefined : this.byRequest.get(ours);
  }

  /** `call` is over: its links go. */
  forget(call: McpCallInfo): void {
    for (const [id, c] of this.byRequest) {
      if (c !== call) continue;
      this.byRequest.delete(id);
      for (const [s, ours] of this.carriedBy) if (ours === id) this.carriedBy.delete(s);
    }
  }
}

/**
 * A fetch for the streamable HTTP transport that reads, as they pass, the server requests each POST's event stream
 * carries, and tells `links` which of the POST's requests they came for. The event is read here before the SDK parses
 * it (this stream is upstream of its reader), so the link is known when its request handler runs.
 */
export function linkingFetch(f: typeof fetch, links: () => WireLinks): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const res = await f(input, init);
    const ours = init?.method === 'POST' && typeof init.body === 'string' ? toolCallIds(init.body) : [];
    // A POST carries one request (the SDK sends no batches); with several, no one of them is the call it came for.
    if (ours.length !== 1 || !res.body || !(res.headers.get('content-type') ?? '').includes('text/event-stream')) return res;
    const to = links();
    const body = res.body.pipeThrough(sseTap((data) => {
      const m = serverRequest(data);
      if (m !== undefined) to.carried(m, ours[0]!);
    }));
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  }) as typeof fetch;
}

/** The ids of the `tools/call` requests in a POST body. */
function toolCallIds(body: string): Id[] {
  if (!body.includes('"tools/call"')) return [];
  try {
    const parsed = JSON.parse(body) as unknown;
    return (Array.isArray(parsed) ? parsed : [parsed]).flatMap((m: { method?: unknown; id?: unknown }) => (m && m.method === 'tools/call' && (typeof m.id === 'string' || typeof m.id === 'number') ? [m.id] : []));
  } catch {
    return [];
  }
}

/** The id of a server request in an event's data (a message with a method and an id), else undefined. */
function serverRequest(data: string): Id | undefined {
  if (!data.includes('"method"')) return undefined; // a result or a notification's data is not parsed twice for nothing
  try {
    const m = JSON.parse(data) as { method?: unknown; id?: unknown };
    return m && typeof m.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number') ? m.id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Passes an event stream through unchanged, giving each event's data to `onData` first. The events are read with
 * eventsource-parser, the parser the MCP SDK's own transport reads this stream with, so both see the same events.
 */
function sseTap(onData: (data: string) => void): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder();
  const parser = createParser({ onEvent: (e) => onData(e.data) });
  return new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      // The event is read before it is passed on: the SDK's parser, downstream, sees it after the link is known.
      parser.feed(decoder.decode(chunk, { stream: true }));
      controller.enqueue(chunk);
    },
  });
}

/** What `route` found for a server request: the call to ask on (and the call it marks as asking), or a refusal. */
export type Route = { call: McpCallInfo; asker: McpCallInfo } | { call: undefined } | { refused: 'withdrawn' | 'unattributable' };

/** A call in flight (or over: `answered` says whether the server answered it, with no question of its own left open). */
type Entry = { call: McpCallInfo; ended: AbortController; answered?: boolean; at?: number };

/**
 * How long a call that ended unanswered (cancelled, timed out) may still have a question of its own come in: its
 * cancellation and the server's question can cross on the wire.
 */
const LEFT_BEHIND_MS = 10_000;

/** The tool calls in flight on one connection, oldest first, and which of them wait on a question. */
export class McpCalls {
  private readonly inFlight: Entry[] = [];
  /** Calls that ended unanswered in the last LEFT_BEHIND_MS, oldest first. */
  private readonly leftBehind: Entry[] = [];
  /** The calls with a question of theirs waiting for its answer, and how many. */
  private readonly eliciting = new Map<McpCallInfo, number>();
  /** Questions waiting to be told whose they are. */
  private unrouted = 0;
  private readonly listeners = new Set<() => void>();

  /** The oldest call in flight (an authorization item raised now belongs to it), if any. */
  oldest(): McpCallInfo | undefined {
    return this.inFlight[0]?.call;
  }

  /** `call` starts (its `ended` is set); the function returned ends it, saying whether the server answered it. */
  begin(call: McpCallInfo): (answered: boolean) => void {
    const ended = new AbortController();
    call.ended = ended.signal;
    const entry: Entry = { call, ended };
    this.inFlight.push(entry);
    this.changed();
    return (answered) => {
      const i = this.inFlight.indexOf(entry);
      if (i >= 0) this.inFlight.splice(i, 1);
      entry.answered = answered;
      if (!answered) this.leftBehind.push(Object.assign(entry, { at: Date.now() }));
      this.prune();
      ended.abort();
      this.changed();
    };
  }

  /** Runs `ask` with `asker` marked as waiting on a question. */
  async asking<T>(asker: McpCallInfo, ask: () => Promise<T>): Promise<T> {
    this.eliciting.set(asker, (this.eliciting.get(asker) ?? 0) + 1);
    this.changed();
    try {
      return await ask();
    } finally {
      const left = this.eliciting.get(asker)! - 1;
      if (left) this.eliciting.set(asker, left);
      else this.eliciting.delete(asker);
      this.changed();
    }
  }

  /**
   * The call a server request belongs to. `linked` (its call's own response stream carried it) is it. Otherwise MCP
   * says nothing, and the candidates are the calls in flight when it came (a later call cannot have asked it) and
   * those that ended unanswered just before (a question may cross their cancellation): none in flight, it came
   * outside a call; all one session's, it is asked on that session (on its oldest call in flight not already asking,
   * alive while any of those calls is); several sessions', it waits, shown to no one, until the ones left are one
   * session's (the others answered). It is refused when the server withdraws it; when the candidates are of several
   * sessions and one of them ended unanswered (the question may be its own, left behind); or when no call can end
   * meanwhile (no call waits on a person's answer, and every call in flight may be one waiting on an unrouted
   * question: two sessions asking at once).
   */
  async route(linked: McpCallInfo | undefined, signal: AbortSignal, onWait: (sessions: number) => void): Promise<Route> {
    if (linked) return { call: linked, asker: linked };
    this.prune();
    const candidates = [...this.leftBehind, ...this.inFlight];
    this.unrouted++;
    let told = false;
    try {
      for (;;) {
        if (signal.aborted) return { refused: 'withdrawn' };
        const open = candidates.filter((e) => e.answered === undefined).map((e) => e.call);
        const sessions = new Set(candidates.filter((e) => e.answered !== true).map((e) => e.call.sessionKey)).size;
        if (sessions > 1 && candidates.some((e) => e.answered === false)) return { refused: 'unattributable' };
        if (!open.length) return { call: undefined };
        if (sessions === 1) return this.within(open);
        if (this.eliciting.size === 0 && this.inFlight.length <= this.unrouted) return { refused: 'unattributable' };
        if (!told) onWait(sessions);
        told = true;
        await this.next(signal);
      }
    } finally {
      this.unrouted--;
      this.changed();
    }
  }

  /** One session's calls: its oldest not asking; with several, the question lives until all of them are over. */
  private within(calls: McpCallInfo[]): Route {
    const asker = calls.find((c) => !this.eliciting.has(c)) ?? calls[0]!;
    if (calls.length === 1) return { call: asker, asker };
    const all = new AbortController();
    const ends = calls.map((c) => c.ended).filter((s): s is AbortSignal => !!s);
    const check = () => ends.every((s) => s.aborted) && all.abort();
    for (const s of ends) s.addEventListener('abort', check, { once: true });
    check();
    const call: McpCallInfo = {
      runId: asker.runId,
      sessionKey: asker.sessionKey,
      callId: asker.callId,
      tool: asker.tool,
      ...(asker.trust ? { trust: asker.trust } : {}),
      signal: asker.signal,
      ended: all.signal,
      // A refused status write is the asker's own (it throws it once its request returns).
      get fenced() {
        return asker.fenced;
      },
      set fenced(e) {
        asker.fenced = e;
      },
    };
    return { call, asker };
  }

  private prune(): void {
    while (this.leftBehind.length && Date.now() - this.leftBehind[0]!.at! > LEFT_BEHIND_MS) this.leftBehind.shift();
  }

  private changed(): void {
    for (const l of [...this.listeners]) l();
  }

  /** Resolves at the next change of the calls in flight (or of their questions), or when `signal` ends. */
  private next(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        this.listeners.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.listeners.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
