// Parts for fault tests seen from outside: gateway child processes to kill, stop and restart; JSON-RPC over fresh
// connections; fake receivers on loopback (webhooks, a chat API) that log what reached them; SSE followers.
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { TEST_TOKEN } from './harness';
import { childArgs } from './child-bundle';

/** A seeded PRNG (mulberry32): the same seed gives the same load and the same faults. */
export function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]! };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Thrown when no connection could be made (nothing was sent): the caller may try another process. */
export class NotSent extends Error {}

/** One JSON-RPC call on a fresh connection (no keep-alive: a stopping server never sees a request it did not accept). */
export function rpcAt<T = any>(url: string, method: string, params: unknown, timeoutMs = 60_000): Promise<T> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  const u = new URL(`${url}/api/gateway`);
  return new Promise<T>((resolve, reject) => {
    let sent = false;
    const req = http.request(
      { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent: false, timeout: timeoutMs, headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}`, 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('error', reject);
        res.on('end', () => {
          try {
            const j = JSON.parse(text);
            if (j.error) reject(Object.assign(new Error(`${method}: ${j.error.message}`), { rpc: j.error }));
            else resolve(j.result as T);
          } catch {
            reject(new Error(`${method}: HTTP ${res.statusCode} ${text.slice(0, 200)}`));
          }
        });
      },
    );
    req.on('socket', (s) => s.on('connect', () => (sent = true)));
    req.on('timeout', () => req.destroy(new Error(`${method}: no answer in ${timeoutMs} ms`)));
    req.on('error', (e: NodeJS.ErrnoException) => reject(!sent && (e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET') ? new NotSent(e.message) : e));
    req.end(body);
  });
}

export interface ProcOptions {
  name: string;
  dataDir: string;
  configFile: string;
  env: Record<string, string>;
  log?: (line: string) => void;
  /** A process that exited by itself (not killed or stopped by the suite): its exit and its last stderr lines. */
  onCrash?: (p: Proc, exit: string, stderr: string[]) => void;
}

/** A gateway child process that can be killed, stopped, continued and started again (a new port each start). */
export class Proc {
  child: ChildProcess | null = null;
  url = '';
  pid = 0;
  stopped = false; // SIGSTOPped
  starts = 0;
  /** Exits that the suite did not cause (a crash), and the last stderr lines kept for telling why. */
  crashes = 0;
  private expectExit = false;
  private stderrTail: string[] = [];
  constructor(readonly o: ProcOptions) {}

  get alive(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }
  /** Alive, not stopped, listening: a client may send here. */
  get serving(): boolean {
    return this.alive && !this.stopped && !!this.url;
  }

  async start(): Promise<void> {
    this.starts++;
    const child = spawn(process.execPath, childArgs('child-server'), {
      env: {
        ...process.env,
        CROSSTALK_DATA_DIR: this.o.dataDir,
        CROSSTALK_WORKSPACES: `${this.o.dataDir}-ws`,
        CROSSTALK_TOKEN: TEST_TOKEN,
        CROSSTALK_LOG_LEVEL: process.env.FAULTS_LOG_LEVEL ?? 'silent',
        CROSSTALK_CONFIG: this.o.configFile,
        ...this.o.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.url = '';
    this.stopped = false;
    this.expectExit = false;
    this.stderrTail = [];
    const log = this.o.log;
    child.stderr!.on('data', (d: Buffer) => {
      const text = d.toString().trimEnd();
      this.stderrTail = [...this.stderrTail, ...text.split('\n')].slice(-20);
      log?.(`${this.o.name} ${child.pid} stderr: ${text}`);
    });
    child.once('exit', (code, sig) => {
      if (this.expectExit || this.child !== child) return;
      this.crashes++;
      this.url = '';
      this.o.onCrash?.(this, `${code ?? sig}`, this.stderrTail);
    });
    this.url = await new Promise<string>((resolve, reject) => {
      let buf = '';
      child.stdout!.on('data', (d: Buffer) => {
        const s = d.toString();
        if (log) for (const l of s.split('\n')) if (l) log(`${this.o.name} ${child.pid}: ${l}`);
        buf += s;
        const m = /LISTENING (\S+)/.exec(buf);
        if (m) resolve(m[1]!);
      });
      child.once('exit', (code, sig) => reject(new Error(`${this.o.name} exited (${code ?? sig}) before listening`)));
    });
    this.pid = child.pid!;
  }

  exited(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return Promise.resolve();
    return new Promise((r) => c.once('exit', () => r()));
  }

  signal(sig: NodeJS.Signals): void {
    if (!this.alive) return;
    this.child!.kill(sig);
    if (sig === 'SIGSTOP') this.stopped = true;
    if (sig === 'SIGCONT') this.stopped = false;
  }

  async kill(): Promise<void> {
    this.expectExit = true;
    if (this.stopped) this.signal('SIGCONT');
    this.signal('SIGKILL');
    await this.exited();
    this.url = '';
  }

  /** SIGTERM: a graceful stop; resolves when the process has exited (with its exit code). */
  async terminate(): Promise<number | null> {
    const c = this.child;
    if (!c || !this.alive) return c?.exitCode ?? null;
    const code = new Promise<number | null>((r) => c.once('exit', (x) => r(x)));
    this.url = '';
    this.expectExit = true;
    c.kill('SIGTERM');
    return code;
  }
}

export interface Received {
  path: string;
  body: any;
  headers: http.IncomingHttpHeaders;
  at: number;
}

/** A loopback HTTP receiver that logs every POST; `hangFor` makes it hold answers (a receiver that hangs). */
export async function receiver(answer: (r: Received) => { status?: number; body: unknown } = () => ({ body: { ok: true } })) {
  const got: Received[] = [];
  let hangUntil = 0;
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (d) => (text += d));
    req.on('end', () => {
      let body: any = text;
      try {
        body = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      const r: Received = { path: req.url ?? '', body, headers: req.headers, at: Date.now() };
      const reply = () => {
        // A hung answer that the sender gave up on is not a delivery: log only what is answered.
        if (res.destroyed || req.socket.destroyed) return;
        got.push(r);
        const a = answer(r);
        res.writeHead(a.status ?? 200, { 'content-type': 'application/json' }).end(JSON.stringify(a.body));
      };
      const wait = hangUntil - Date.now();
      if (wait > 0) setTimeout(reply, wait);
      else reply();
    });
  });
  server.keepAliveTimeout = 500;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    got,
    hangFor(ms: number) {
      hangUntil = Date.now() + ms;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Telegram's sendMessage answer, enough for the channel adapter. */
export const telegramAnswer = (() => {
  let n = 0;
  return (r: Received) => ({ body: { ok: true, result: { message_id: ++n, date: Math.floor(Date.now() / 1000), chat: { id: r.body?.chat_id ?? 1, type: 'private' }, text: r.body?.text ?? '' } } });
})();

/** An SSE reader that follows a session across processes: when its stream drops it resumes on the next one by cursor. */
export function follow(urls: () => string[], sessionKey: string) {
  const events: any[] = [];
  let stop = false;
  let reconnects = 0;
  let opened = false;
  const done = (async () => {
    let cursor: string | undefined;
    for (let i = 0; !stop; i++) {
      const all = urls();
      const base = all.length ? all[i % all.length]! : '';
      const ac = new AbortController();
      const stopper = setInterval(() => stop && ac.abort(), 50);
      try {
        if (!base) throw new Error('no process');
        const res = await fetch(`${base}/api/gateway/events?sessionKey=${sessionKey}`, {
          headers: { authorization: `Bearer ${TEST_TOKEN}`, ...(cursor ? { 'last-event-id': cursor } : {}) },
          signal: ac.signal,
        });
        if (!res.ok) throw new Error(`SSE ${res.status}`);
        opened = true;
        const reader = res.body!.getReader();
        const dec = new TextDecoder();
        let buf = '';
        for (;;) {
          const { done: end, value } = await reader.read();
          if (end) break;
          buf += dec.decode(value, { stream: true });
          let k: number;
          while ((k = buf.indexOf('\n\n')) >= 0) {
            const frame = buf.slice(0, k);
            buf = buf.slice(k + 2);
            const id = frame.split('\n').find((l) => l.startsWith('id: '))?.slice(4);
            const data = frame.split('\n').find((l) => l.startsWith('data: '))?.slice(6);
            if (data) {
              events.push(JSON.parse(data));
              cursor = id;
            }
          }
        }
      } catch {
        /* dropped: resume elsewhere */
      } finally {
        clearInterval(stopper);
      }
      if (!stop) {
        if (opened) reconnects++;
        opened = false;
        await sleep(100);
      }
    }
  })();
  return {
    sessionKey,
    events,
    get reconnects() {
      return reconnects;
    },
    async close() {
      stop = true;
      await done;
    },
  };
}

/** A session's whole event log replayed over SSE (from its start) until `lastId` shows up or `ms` pass. */
export async function replayLog(url: string, sessionKey: string, lastId: unknown, ms = 20_000): Promise<any[]> {
  const events: any[] = [];
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), ms);
  try {
    const res = await fetch(`${url}/api/gateway/events?sessionKey=${sessionKey}`, { headers: { authorization: `Bearer ${TEST_TOKEN}`, 'last-event-id': '0' }, signal: ac.signal });
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      const frames = buf.split('\n\n');
      buf = frames.pop()!;
      for (const frame of frames) {
        const data = frame.split('\n').find((l) => l.startsWith('data: '));
        if (data) events.push(JSON.parse(data.slice(6)));
      }
      if (events.some((e) => e.id === lastId)) break;
    }
  } catch {
    /* timed out */
  } finally {
    clearTimeout(t);
    ac.abort();
  }
  return events;
}

/**
 * Gap and duplicate check of what an SSE follower saw across its reconnects: no event twice, and each run's events
 * contiguous (seq rising by 1) from the first it saw; a run it saw start it saw end. Returns problems (empty: fine).
 */
export function checkFollower(f: ReturnType<typeof follow>): string[] {
  const problems: string[] = [];
  const ids = f.events.map((e) => e.id);
  if (new Set(ids).size !== ids.length) problems.push(`${f.sessionKey}: SSE client saw a duplicate event`);
  const byRun = new Map<string, any[]>();
  for (const e of f.events) {
    if (!byRun.has(e.runId)) byRun.set(e.runId, []);
    byRun.get(e.runId)!.push(e);
  }
  for (const [runId, evs] of byRun) {
    for (let i = 1; i < evs.length; i++) {
      if (evs[i].seq !== evs[i - 1].seq + 1) {
        problems.push(`${f.sessionKey}: SSE client's events of ${runId} jump from seq ${evs[i - 1].seq} to ${evs[i].seq} (${f.reconnects} reconnects)`);
        break;
      }
    }
  }
  for (const runId of unended(f)) problems.push(`${f.sessionKey}: SSE client saw ${runId} start but not end`);
  return problems;
}

/** The runs an SSE follower saw start (from their first event) and has not seen end yet. */
export function unended(f: ReturnType<typeof follow>): string[] {
  const first = new Map<string, any>();
  const ended = new Set<string>();
  for (const e of f.events) {
    if (!first.has(e.runId)) first.set(e.runId, e);
    if (e.stream === 'lifecycle' && (e.data?.phase === 'end' || e.data?.phase === 'error')) ended.add(e.runId);
  }
  return [...first].filter(([runId, e]) => e.seq === 1 && e.stream === 'lifecycle' && e.data?.phase === 'start' && !ended.has(runId)).map(([runId]) => runId);
}
