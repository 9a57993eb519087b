// What an MCP server may send us (CONTRACT §5 "MCP tools"): caps on messages, list pages, tools and schemas, and a
// fetch that stops reading a response past the message cap (and, for OAuth, past a deadline) before anything parses it.
import { cappedBody } from '../capped-body';

/** One JSON-RPC message from a server (a tool list page, a call's result), in bytes, before it is parsed. */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
/** Pages of `tools/list` read per listing: a server that always answers `nextCursor` stops here. */
export const MAX_LIST_PAGES = 32;
/** Tools taken from one server; the rest are left out and reported. */
export const MAX_TOOLS = 256;
/** One tool's definition (name, description, schemas) as JSON. */
export const MAX_TOOL_BYTES = 64 * 1024;

/** What a capped fetch may do beyond its byte cap: a deadline, another fetch underneath, the peer's name in its errors. */
export interface CapOptions {
  /** The request ends after this long, the reading of its body included (a peer that trickles bytes is cut off). */
  timeoutMs?: number;
  /** The fetch called (the global one by default). */
  fetch?: typeof fetch;
  /** Who answers, as errors name it. */
  peer?: string;
}

/**
 * A fetch whose responses stop at `max` bytes a message (`onOverflow` is told): the streamable HTTP transport's, and,
 * with a deadline, the OAuth requests' (oauth-fetch.ts).
 */
export function cappedFetch(max: number, onOverflow: () => void, o: CapOptions = {}): typeof fetch {
  const peer = o.peer ?? 'the MCP server';
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const deadline = o.timeoutMs ? AbortSignal.timeout(o.timeoutMs) : undefined;
    const signal = deadline && init?.signal ? AbortSignal.any([init.signal, deadline]) : (deadline ?? init?.signal);
    const why = (e: unknown) => (deadline?.aborted && !init?.signal?.aborted ? new Error(`${peer} did not answer within ${o.timeoutMs} ms`) : e);
    let res: Response;
    try {
      res = await (o.fetch ?? fetch)(input, signal ? { ...init, signal } : init);
    } catch (e) {
      throw why(e);
    }
    if (!res.body) return res;
    const eventStream = (res.headers.get('content-type') ?? '').includes('text/event-stream');
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (!eventStream && declared > max) {
      await res.body.cancel().catch(() => undefined);
      onOverflow();
      throw new Error(`${peer} sent a message of ${declared} bytes (over ${max}); it was not read`);
    }
    const overflow = () => (onOverflow(), new Error(`${peer} sent a message over ${max} bytes; it was not read`));
    return new Response(cappedBody(res.body, max, { eventStream, overflow, why }), { status: res.status, statusText: res.statusText, headers: res.headers });
  }) as typeof fetch;
}
