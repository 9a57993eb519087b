// Fetch-style HTTP handlers (Request → Response) for the gateway, its SSE events and metrics; Next routes and tests share them.
import { isAuthorized } from '../auth';
import type { FullRuntime } from '../runtime-types';
import { handleJsonRpc, rpcError, tooLargeResponse, unauthorizedResponse, zodIssues } from '../gateway/jsonrpc';
import { sessionKeySchema } from '../gateway/schemas';
import { type EventCursor, parseEventCursor } from '../events/cursor';
import type { AgentEvent } from '../events/types';

export const MAX_BODY_BYTES = 1024 * 1024;

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store' } });

const unauthorized = () => json(unauthorizedResponse(), 401);

/** Reads the body up to the limit; null when it is larger. */
export async function readCapped(req: Request, cap: number): Promise<string | null> {
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > cap) return null;
  if (!req.body) return '';
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > cap) {
      await reader.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function handleGatewayPost(rt: FullRuntime, req: Request): Promise<Response> {
  if (!isAuthorized(req.headers, rt.token)) return unauthorized();
  const body = await readCapped(req, MAX_BODY_BYTES);
  if (body === null) return json(tooLargeResponse(), 413);
  const res = await handleJsonRpc(rt.gateway, body, rt.log);
  if (res === null) return new Response(null, { status: 204 });
  return json(res);
}

const enc = new TextEncoder();

/** One SSE frame per event, made once for every stream that sends it (the bus fans one object out to them all). */
const frames = new WeakMap<AgentEvent, string>();
function frameOf(ev: AgentEvent): string {
  let f = frames.get(ev);
  if (f === undefined) {
    const { cursor, ...event } = ev;
    f = `id: ${cursor ?? event.id}\ndata: ${JSON.stringify(event)}\n\n`;
    frames.set(ev, f);
  }
  return f;
}
/** Events sent in one write at most: a burst (a model's deltas, fanned out together) is one chunk, not one each. */
const FRAMES_PER_WRITE = 256;

export async function handleEvents(rt: FullRuntime, req: Request): Promise<Response> {
  if (!isAuthorized(req.headers, rt.token, { method: 'GET' })) return unauthorized();
  const url = new URL(req.url);
  const rawKey = url.searchParams.get('sessionKey');
  const runId = url.searchParams.get('runId') ?? undefined;
  let sessionKey: string | undefined;
  if (rawKey !== null) {
    const parsed = sessionKeySchema.safeParse(rawKey);
    if (!parsed.success) return json(rpcError(null, -32602, 'invalid sessionKey', { code: 'invalid_request', issues: zodIssues(parsed.error) }), 400);
    sessionKey = parsed.data;
  }
  if (!sessionKey && !runId) return json(rpcError(null, -32602, 'sessionKey or runId is required', { code: 'invalid_request' }), 400);
  const lastRaw = req.headers.get('last-event-id') ?? url.searchParams.get('lastEventId');
  let after: EventCursor | undefined;
  if (lastRaw !== null && lastRaw !== '') {
    const c = parseEventCursor(lastRaw);
    if (!c || (c.tx !== undefined && rt.store.dialect !== 'postgres')) return json(rpcError(null, -32602, 'Last-Event-ID must be an event cursor (an SSE id)', { code: 'invalid_cursor' }), 400);
    // A cursor past the log's end was never issued: replayed from, it would skip the events that take its place.
    if (await rt.store.cursorBeyondLog(c)) return json(rpcError(null, -32602, 'Last-Event-ID is past the end of the event log: not a cursor it issued', { code: 'invalid_cursor' }), 400);
    after = c;
  }
  // Subscribe before the response headers go out, so nothing emitted from now on is missed; a live stream starts
  // at the log as of now (PostgreSQL: its settled horizon, read first), not at an older event already written.
  const liveFrom = after === undefined ? await rt.bus.liveStart() : undefined;
  const sub = rt.bus.subscribe({ sessionKey, runId }, after, liveFrom);
  const abort = new AbortController();
  let heartbeat: NodeJS.Timeout | undefined;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(enc.encode('retry: 1000\n\n'));
      heartbeat = setInterval(() => {
        try {
          controller.enqueue(enc.encode(': ping\n\n'));
        } catch {
          /* closed */
        }
      }, 15_000);
    },
    async pull(controller) {
      const ev = await sub.next(abort.signal);
      if (!ev) {
        clearInterval(heartbeat);
        controller.close();
        return;
      }
      let text = frameOf(ev);
      for (const more of sub.takeBuffered(FRAMES_PER_WRITE - 1)) text += frameOf(more);
      controller.enqueue(enc.encode(text));
    },
    cancel() {
      clearInterval(heartbeat);
      abort.abort();
      sub.close();
    },
  });
  req.signal?.addEventListener('abort', () => {
    clearInterval(heartbeat);
    abort.abort();
    sub.close();
  });
  return new Response(stream, {
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' },
  });
}

export async function handleMetrics(rt: FullRuntime, req: Request): Promise<Response> {
  if (!isAuthorized(req.headers, rt.token, { method: req.method })) return new Response('unauthorized\n', { status: 401 });
  const body = await rt.metrics.registry.metrics();
  return new Response(body, { headers: { 'content-type': rt.metrics.registry.contentType } });
}
