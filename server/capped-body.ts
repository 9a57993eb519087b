// A response body read up to a byte cap (a remote's answer: MCP, its OAuth, A2A): past it, reading stops and the body errors.

/**
 * `body`, erroring with `overflow()` once a message grows past `max` bytes: for an event stream the bytes since the
 * last event boundary (a long-lived stream may carry many events), for anything else the whole body. `why` words a read
 * error (a deadline's, as the deadline).
 */
export function cappedBody(
  body: ReadableStream<Uint8Array>,
  max: number,
  o: { eventStream?: boolean; overflow: () => Error; why?: (e: unknown) => unknown },
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let since = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let read;
      try {
        read = await reader.read();
      } catch (e) {
        return controller.error(o.why ? o.why(e) : e);
      }
      if (read.done) return controller.close();
      const chunk = read.value;
      let boundary = -1;
      // An event ends at a blank line: "\n\n" or "\r\n\r\n".
      if (o.eventStream) for (let i = chunk.length - 1; i > 0 && boundary < 0; i--) if (chunk[i] === 0x0a && (chunk[i - 1] === 0x0a || (i > 2 && chunk[i - 1] === 0x0d && chunk[i - 2] === 0x0a))) boundary = i;
      since = boundary >= 0 ? chunk.length - boundary - 1 : since + chunk.length;
      if (since > max) {
        void reader.cancel().catch(() => undefined);
        return controller.error(o.overflow());
      }
      controller.enqueue(chunk);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
