// Loopback HTTP clients for the benchmarks: JSON-RPC over POST /api/gateway and SSE on /api/gateway/events.
import http from 'node:http';

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

export interface RpcClientOptions {
  baseUrl: string;
  token: string;
  /** Per-request timeout (ms). */
  timeoutMs?: number;
}

/** A keep-alive JSON-RPC 2.0 client; one pooled socket per request in flight. */
export class RpcClient {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 2048 });
  private readonly url: URL;
  private nextId = 1;

  constructor(private readonly opts: RpcClientOptions) {
    this.url = new URL('/api/gateway', opts.baseUrl);
  }

  call<T = unknown>(method: string, params: unknown = {}): Promise<T> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params });
    return new Promise<T>((resolve, reject) => {
      const req = http.request(
        this.url,
        {
          method: 'POST',
          agent: this.agent,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            authorization: `Bearer ${this.opts.token}`,
          },
          timeout: this.opts.timeoutMs ?? 120_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: { result?: T; error?: { code: number; message: string; data?: unknown } };
            try {
              parsed = JSON.parse(text);
            } catch {
              reject(new RpcError(res.statusCode ?? 0, `HTTP ${res.statusCode}: ${text.slice(0, 200)}`));
              return;
            }
            if (parsed.error) reject(new RpcError(parsed.error.code, parsed.error.message, parsed.error.data));
            else if (res.statusCode !== 200) reject(new RpcError(res.statusCode ?? 0, `HTTP ${res.statusCode}`));
            else resolve(parsed.result as T);
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} timed out`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

export interface AgentStartResult {
  runId: string;
  status: string;
}

export interface AgentWaitResult {
  status: 'ok' | 'error' | 'timeout';
  response?: string;
  error?: string;
}

/** One turn: `agent` then `agent.wait`; resolves with the wait result. */
export async function turn(rpc: RpcClient, sessionKey: string, message: string, extra: Record<string, unknown> = {}): Promise<AgentWaitResult> {
  const started = await rpc.call<AgentStartResult>('agent', { sessionKey, message, ...extra });
  return rpc.call<AgentWaitResult>('agent.wait', { runId: started.runId, timeoutMs: 120_000 });
}

export interface SseEvent {
  id: string | undefined;
  data: string;
  /** Receive time, ms since the epoch with sub-ms precision. */
  receivedAt: number;
}

export interface SseSubscription {
  close(): void;
}

export const nowMs = () => performance.timeOrigin + performance.now();

/** Opens an SSE stream; resolves once the response headers (200) have arrived, i.e. the server is subscribed. */
export function subscribeSse(url: string, token: string, onEvent: (e: SseEvent) => void, lastEventId?: number): Promise<SseSubscription> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'text/event-stream' };
  if (lastEventId !== undefined) headers['last-event-id'] = String(lastEventId);
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`SSE ${url}: HTTP ${res.statusCode}`));
        return;
      }
      res.setEncoding('utf8');
      let buffer = '';
      res.on('data', (chunk: string) => {
        const receivedAt = nowMs();
        buffer += chunk;
        let sep: number;
        while ((sep = buffer.search(/\r?\n\r?\n/)) !== -1) {
          const block = buffer.slice(0, sep);
          buffer = buffer.slice(sep).replace(/^\r?\n\r?\n/, '');
          let id: string | undefined;
          const data: string[] = [];
          for (const line of block.split(/\r?\n/)) {
            if (line.startsWith(':')) continue;
            const colon = line.indexOf(':');
            const field = colon === -1 ? line : line.slice(0, colon);
            const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'id') id = value;
            else if (field === 'data') data.push(value);
          }
          if (data.length > 0) onEvent({ id, data: data.join('\n'), receivedAt });
        }
      });
      res.on('error', () => {});
      resolve({ close: () => req.destroy() });
    });
    req.on('error', (e) => reject(e));
  });
}

/**
 * Replays a stream from the start (Last-Event-ID 0) until `pick` returns a value for one event;
 * undefined when nothing matched within `timeoutMs`.
 */
export async function replayUntil<T>(url: string, token: string, pick: (event: unknown) => T | undefined, timeoutMs = 5_000): Promise<T | undefined> {
  let found: T | undefined;
  let done: () => void = () => {};
  const finished = new Promise<void>((r) => (done = r));
  const sub = await subscribeSse(
    url,
    token,
    (e) => {
      if (found !== undefined) return;
      try {
        found = pick(JSON.parse(e.data));
      } catch {
        /* not JSON */
      }
      if (found !== undefined) done();
    },
    0,
  );
  const timer = setTimeout(done, timeoutMs);
  await finished;
  clearTimeout(timer);
  sub.close();
  return found;
}

/**
 * Plain JavaScript source of a keep-alive JSON-RPC client (`call`) and a scripted turn (`turn`: `agent` then
 * `agent.wait`, throwing unless ok), for a client run as a worker or a child process beside an in-process server;
 * `url` and `token` are JavaScript expressions evaluated there.
 */
export function turnClientSource(url: string, token: string): string {
  return `
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
let id = 1;
function call(method, params) {
  const body = JSON.stringify({ jsonrpc: '2.0', id: id++, method, params });
  return new Promise((resolve, reject) => {
    const req = http.request(${url}, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: 'Bearer ' + ${token} } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => { const p = JSON.parse(Buffer.concat(chunks).toString()); p.error ? reject(new Error(p.error.message)) : resolve(p.result); });
    });
    req.on('error', reject);
    req.end(body);
  });
}
async function turn(key, text) {
  const s = await call('agent', { sessionKey: key, message: text });
  const w = await call('agent.wait', { runId: s.runId, timeoutMs: 120000 });
  if (w.status !== 'ok') throw new Error('turn ' + w.status + ' ' + (w.error || ''));
}
`;
}
