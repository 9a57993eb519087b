// What an MCP server may send us (CONTRACT §5 "MCP tools"): caps on messages, list pages, tools and schemas, and a
// fetch that stops reading a streamable HTTP response past the message cap before anything parses it.

/** One JSON-RPC message from a server (a tool list page, a call's result), in bytes, before it is parsed. */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
/** Pages of `tools/list` read per listing: a server that always answers `nextCursor` stops here. */
export const MAX_LIST_PAGES = 32;
/** Tools taken from one server; the rest are left out and reported. */
export const MAX_TOOLS = 256;
/** One tool's definition (name, description, schemas) as JSON. */
export const MAX_TOOL_BYTES = 64 * 1024;

/**
 * A body that errors once a message grows past `max` bytes: for an event stream, the bytes since the last event
 * boundary (a long-lived stream may carry many events); for anything else, the whole body.
 */
function cappedBody(body: ReadableStream<Uint8Array>, max: number, eventStream: boolean, onOverflow: () => void): ReadableStream<Uint8Array> {
  let since = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        let boundary = -1;
        // An event ends at a blank line: "\n\n" or "\r\n\r\n".
        if (eventStream) for (let i = chunk.length - 1; i > 0 && boundary < 0; i--) if (chunk[i] === 0x0a && (chunk[i - 1] === 0x0a || (i > 2 && chunk[i - 1] === 0x0d && chunk[i - 2] === 0x0a))) boundary = i;
        since = boundary >= 0 ? chunk.length - boundary - 1 : since + chunk.length;
        if (since > max) {
          onOverflow();
          controller.error(new Error(`the MCP server sent a message over ${max} bytes; it was not read`));
          return;
        }
        controller.enqueue(chunk);
      },
    }),
  );
}

/** A fetch for the streamable HTTP transport whose responses stop at `max` bytes a message (`onOverflow` is told). */
export function cappedFetch(max: number, onOverflow: () => void): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const res = await fetch(input, init);
    if (!res.body) return res;
    const eventStream = (res.headers.get('content-type') ?? '').includes('text/event-stream');
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (!eventStream && declared > max) {
      await res.body.cancel().catch(() => undefined);
      onOverflow();
      throw new Error(`the MCP server sent a message of ${declared} bytes (over ${max}); it was not read`);
    }
    return new Response(cappedBody(res.body, max, eventStream, onOverflow), { status: res.status, statusText: res.statusText, headers: res.headers });
  }) as typeof fetch;
}
