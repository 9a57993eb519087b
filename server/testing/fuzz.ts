// The fuzz runner over every entry point (the test's short seeded run and bench/fuzz.ts's long one): no 5xx, no `internal`, no hang, still serving.
import http from 'node:http';
import { ERROR_CODES } from '../errors';
import type { FullRuntime } from '../runtime-types';
import { caseSeed, type Entry, ENTRIES, type FuzzCase, type FuzzWorld, GENERATORS, makeGen, rng } from './fuzz-cases';

export { ENTRIES, type Entry } from './fuzz-cases';

export interface FuzzOptions {
  /** The gateway's origin (server/http/node-routes.ts: JSON-RPC, SSE, tRPC, A2A, MCP, channels, /login). */
  url: string;
  world: FuzzWorld;
  seed: number;
  counts: Partial<Record<Entry, number>>;
  /** Requests in flight at once. */
  width?: number;
  /** A request with no complete answer by then is a hang. */
  timeoutMs?: number;
  /** Replays one case only: `<entry>:<index>`. */
  only?: string;
}

export interface FuzzFailure {
  entry: Entry;
  index: number;
  reason: string;
  request: string;
  /** How to run exactly this case again. */
  replay: string;
}

export interface FuzzReport {
  seed: number;
  tried: Record<Entry, number>;
  statuses: Record<string, number>;
  failures: FuzzFailure[];
  ms: number;
}

/** How long a streamed answer is read after its first bytes. */
const STREAM_READ_MS = 500;
const ALLOWED_RPC = new Set([-32700, -32600, -32601, -32602, -32001, -32004, -32009, -32000]);
const ERROR_SET = new Set<string>(ERROR_CODES);

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

/** One request over node:http (any header, any bytes, the path as is), answered in full — a stream only up to its first bytes. */
function send(base: string, c: FuzzCase, timeoutMs: number): Promise<Answer | 'hang' | 'client-refused'> {
  const u = new URL(base);
  return new Promise((resolve) => {
    let settled = false;
    const done = (v: Answer | 'hang' | 'client-refused') => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(v);
    };
    const body = c.body === undefined ? undefined : Buffer.isBuffer(c.body) ? c.body : Buffer.from(c.body);
    let req: http.ClientRequest;
    try {
      req = http.request({ host: u.hostname, port: u.port, method: c.method, path: c.path, headers: { ...c.headers, ...(body ? { 'content-length': String(body.length) } : {}), connection: 'close' }, agent: false });
    } catch {
      return resolve('client-refused'); // a header node's client will not send (the server never sees it)
    }
    const timer = setTimeout(() => done('hang'), timeoutMs);
    req.on('error', (e: NodeJS.ErrnoException) => done(e.code === 'ECONNRESET' || e.code === 'EPIPE' ? { status: 0, contentType: '', text: `socket ${e.code}` } : 'client-refused'));
    req.on('response', (res) => {
      const contentType = String(res.headers['content-type'] ?? '');
      const chunks: Buffer[] = [];
      let size = 0;
      const streaming = /text\/event-stream|application\/jsonl/.test(contentType);
      const answer = () => done({ status: res.statusCode ?? 0, contentType, text: Buffer.concat(chunks).toString('utf8') });
      let grace: NodeJS.Timeout | undefined;
      res.on('data', (d: Buffer) => {
        chunks.push(d);
        size += d.length;
        // A stream is alive once it sends; its end may be far off (a live SSE subscription): read on for a moment, then judge what came.
        if (streaming && !grace) grace = setTimeout(answer, STREAM_READ_MS);
        if (size > 8 * 1024 * 1024) answer();
      });
      res.on('end', answer);
      res.on('error', answer);
      res.on('close', () => clearTimeout(grace));
    });
    if (body) req.end(body);
    else req.end();
  });
}

/** Every JSON value in an answer: the body, an array's items, SSE `data:` lines, JSON lines. */
function jsonValues(a: Answer): unknown[] {
  const out: unknown[] = [];
  const tryParse = (s: string) => {
    try {
      const v = JSON.parse(s);
      if (Array.isArray(v)) out.push(...v);
      else out.push(v);
    } catch {
      /* not JSON */
    }
  };
  if (/event-stream/.test(a.contentType)) for (const line of a.text.split('\n')) line.startsWith('data:') && tryParse(line.slice(5).trim());
  else if (/jsonl/.test(a.contentType)) for (const line of a.text.split('\n')) line.trim() && tryParse(line);
  else tryParse(a.text);
  return out;
}

/** What is wrong with an answer, or null. */
export function judge(c: FuzzCase, a: Answer): string | null {
  // Past node's 16 KiB header limit the server answers 431 and closes at once: the client may see the reset first.
  const headerBytes = c.path.length + Object.entries(c.headers).reduce((n, [k, v]) => n + k.length + v.length + 4, 0);
  if (headerBytes > 16 * 1024 && (a.status === 0 || a.status === 431)) return null;
  if (a.status === 0) return `connection cut (${a.text})`;
  if (a.status >= 500) return `HTTP ${a.status}`;
  const values = jsonValues(a);
  for (const v of values) {
    const e = (v as { error?: { code?: unknown; data?: { code?: unknown } } } | null)?.error;
    if (!e || typeof e !== 'object') continue;
    if (e.code === -32603 || e.data?.code === 'internal' || (e.data as { httpStatus?: number } | undefined)?.httpStatus === 500) return `internal error: ${JSON.stringify(e).slice(0, 200)}`;
    if (c.entry === 'jsonrpc' && (!ALLOWED_RPC.has(e.code as number) || !ERROR_SET.has(e.data?.code as string))) return `not a §3/§6 error: ${JSON.stringify(e).slice(0, 200)}`;
    if ((c.entry === 'inbound' || c.entry === 'sse') && !ERROR_SET.has((typeof e.code === 'string' ? e.code : e.data?.code) as string)) return `not a §6 code: ${JSON.stringify(e).slice(0, 200)}`;
  }
  if (c.entry === 'login' && ![303, 401, 405].includes(a.status)) return `login answered ${a.status}`;
  if (c.entry === 'sse' && a.status === 200 && !/event-stream/.test(a.contentType)) return `200 without an event stream (${a.contentType})`;
  if ((c.entry === 'inbound' || c.entry === 'sse') && a.status >= 400 && a.status !== 431 && values.length === 0) return `${a.status} with no JSON error: ${a.text.slice(0, 120)}`;
  return null;
}

const summary = (c: FuzzCase) => {
  const body = c.body === undefined ? '' : (Buffer.isBuffer(c.body) ? c.body.toString('latin1') : c.body);
  return `${c.method} ${c.path.slice(0, 160)}${c.path.length > 160 ? '…' : ''} ${JSON.stringify(c.headers).slice(0, 200)} ${body.length} bytes: ${JSON.stringify(body.slice(0, 240))}`;
};

export async function runFuzz(o: FuzzOptions): Promise<FuzzReport> {
  const started = Date.now();
  const tried = Object.fromEntries(ENTRIES.map((e) => [e, 0])) as Record<Entry, number>;
  const statuses: Record<string, number> = {};
  const failures: FuzzFailure[] = [];
  const [onlyEntry, onlyIndex] = o.only ? (o.only.split(':') as [Entry, string]) : [];
  const jobs: Array<{ entry: Entry; index: number }> = [];
  for (const entry of ENTRIES) {
    if (onlyEntry && entry !== onlyEntry) continue;
    for (let index = 0; index < (o.counts[entry] ?? 0); index++) if (onlyIndex === undefined || index === Number(onlyIndex)) jobs.push({ entry, index });
  }
  if (onlyEntry && !jobs.length) jobs.push({ entry: onlyEntry, index: Number(onlyIndex) });
  let next = 0;
  await Promise.all(
    Array.from({ length: o.width ?? 8 }, async () => {
      while (next < jobs.length) {
        const { entry, index } = jobs[next++]!;
        const c = GENERATORS[entry](makeGen(rng(caseSeed(o.seed, entry, index))), o.world);
        const a = await send(o.url, c, o.timeoutMs ?? 15_000);
        if (a === 'client-refused') continue;
        tried[entry]++;
        const key = `${entry} ${a === 'hang' ? 'hang' : a.status}`;
        statuses[key] = (statuses[key] ?? 0) + 1;
        const reason = a === 'hang' ? `no answer in ${o.timeoutMs ?? 15_000} ms` : judge(c, a);
        if (reason) failures.push({ entry, index, reason, request: summary(c), replay: `FUZZ_SEED=${o.seed} FUZZ_ONLY=${entry}:${index}` });
      }
    }),
  );
  return { seed: o.seed, tried, statuses, failures, ms: Date.now() - started };
}

/** A report's failures as lines to print: each names its seed and how to replay it. */
export function describeFailures(r: FuzzReport, max = 20): string {
  return r.failures
    .slice(0, max)
    .map((f) => `fuzz ${f.entry} #${f.index} (seed ${r.seed}; replay: ${f.replay}): ${f.reason}\n    ${f.request}`)
    .join('\n');
}
