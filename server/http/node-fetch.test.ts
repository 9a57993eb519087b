// serveFetch's streamed responses: chunks handed out in one turn of the event loop reach the socket in one write
// (node's own per-tick cork of a chunked response; ServerResponse.cork() would undo it, writing each chunk alone).
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { serveFetch } from './node-fetch';

let server: http.Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

/** Serves `body` once and counts the writes that reach the server's socket while it streams. */
async function socketWrites(body: () => ReadableStream<Uint8Array>): Promise<{ writes: number; text: string }> {
  let writes = 0;
  server = http.createServer((req, res) => {
    const sock = req.socket as Socket & { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
    for (const m of ['_write', '_writev'] as const) {
      const orig = sock[m].bind(sock);
      sock[m] = (...a: unknown[]) => {
        writes++;
        return orig(...a);
      };
    }
    serveFetch(req, res, async () => new Response(body(), { headers: { 'content-type': 'text/event-stream' } }));
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  const text = await (await fetch(`http://127.0.0.1:${port}/`)).text();
  return { writes, text };
}

describe('serveFetch streaming', () => {
  it('writes a burst of chunks (an SSE stream fanning out a run’s deltas) to the socket in one write, not one each', async () => {
    const enc = new TextEncoder();
    const { writes, text } = await socketWrites(
      () =>
        new ReadableStream<Uint8Array>({
          start(c) {
            for (let i = 0; i < 50; i++) c.enqueue(enc.encode(`data: ${i}\n\n`));
            c.close();
          },
        }),
    );
    expect(text).toBe(Array.from({ length: 50 }, (_, i) => `data: ${i}\n\n`).join(''));
    // Headers, the burst, the end: a handful of writes, not 50 (one per chunk, as after a ServerResponse.cork()).
    expect(writes).toBeLessThanOrEqual(4);
  });

  it('still streams chunks that arrive in later turns as they come', async () => {
    const enc = new TextEncoder();
    const { text } = await socketWrites(() => {
      let i = 0;
      return new ReadableStream<Uint8Array>({
        async pull(c) {
          await new Promise((r) => setTimeout(r, 1));
          if (i === 5) return c.close();
          c.enqueue(enc.encode(`data: ${i++}\n\n`));
        },
      });
    });
    expect(text).toBe([0, 1, 2, 3, 4].map((i) => `data: ${i}\n\n`).join(''));
  });
});
