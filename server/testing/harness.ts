// Test harness: a real runtime on a fresh data dir, served over real HTTP on loopback by the same handlers Next uses.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseRawConfig, resolveConfig } from '../config';
import { createRuntime } from '../boot';
import type { FullRuntime } from '../runtime-types';
import { serve } from '../http/node-server';
import { storeUnderTest } from './store-under-test';
import { DEFAULT_TEST_DATABASE_URL } from './pg-test-db';
import { childArgs } from './child-bundle';
export { serve };

export const TEST_TOKEN = 'test-token';

export interface TestServer {
  url: string;
  rt: FullRuntime;
  dataDir: string;
  rpc<T = unknown>(method: string, params?: unknown): Promise<T>;
  rpcRaw(body: unknown, token?: string | null): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
  /** Stops serving and closes the store at once, leaving runs unfinished (a crash, as the store sees it). */
  crash(): Promise<void>;
}

export function tmpDataDir(prefix = 'crosstalk-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/**
 * A folder an `exec` command writes and the test reads: writable by the exec user (as root, `nobody`), and not under
 * /tmp, /var/tmp or /dev/shm, which are each command's own there (exec's PID namespace).
 */
export function execOutDir(): string {
  const scratch = path.join(process.cwd(), 'node_modules', '.cache');
  fs.mkdirSync(scratch, { recursive: true });
  const dir = fs.mkdtempSync(path.join(scratch, 'ct-exec-out-'));
  fs.chmodSync(dir, 0o777);
  return dir;
}

export interface StartOptions {
  config?: Record<string, unknown>;
  dataDir?: string;
  databaseUrl?: string;
  pgSchema?: string;
  /** Pins the server to SQLite in its data dir whatever the pass (the store under test is not asked). */
  sqlite?: true;
}

/** TEST_STORE=postgres runs every harness server on PostgreSQL (TEST_DATABASE_URL), each in a schema of its own. */
const PG_URL = process.env.TEST_DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL;
const schemaFor = (dataDir: string) => `t_${path.basename(dataDir).replace(/[^a-z0-9]/gi, '').toLowerCase()}`;

export async function startTestServer(o: StartOptions = {}): Promise<TestServer> {
  const dataDir = o.dataDir ?? tmpDataDir();
  if (!o.databaseUrl && !o.sqlite && storeUnderTest() === 'postgres') o = { ...o, databaseUrl: PG_URL, pgSchema: schemaFor(dataDir) };
  const config = resolveConfig(parseRawConfig(o.config ?? {}), {
    CROSSTALK_DATA_DIR: dataDir,
    CROSSTALK_WORKSPACES: `${dataDir}-ws`,
    CROSSTALK_TOKEN: TEST_TOKEN,
    ...(o.databaseUrl ? { DATABASE_URL: o.databaseUrl } : {}),
  });
  const rt = await createRuntime({ config, pgSchema: o.pgSchema });
  const srv = await serve(rt);
  const rpcRaw = async (body: unknown, token: string | null = TEST_TOKEN) => {
    const res = await fetch(`${srv.url}/api/gateway`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  let nextId = 1;
  return {
    url: srv.url,
    rt,
    dataDir,
    rpcRaw,
    async rpc<T>(method: string, params: unknown = {}) {
      const { body } = await rpcRaw({ jsonrpc: '2.0', id: nextId++, method, params });
      if (body.error) {
        const err = new Error(`${method}: ${body.error.message}`) as Error & { rpc: unknown };
        err.rpc = body.error;
        throw err;
      }
      return body.result as T;
    },
    async close() {
      await srv.close();
      await rt.close();
    },
    async crash() {
      await srv.close();
      rt.cluster?.crash();
      rt.feed?.stop();
      rt.push.stop(); // a dead process keeps no timers
      await rt.webhooks.stop();
      await rt.store.close();
      // A dead process drives nothing: its runs stop where they are (as when the others declare it dead), after the
      // store is closed, so what their stop would write is not written. Before, they went on in this test process and
      // wrote into the closed store seconds later, while the worker ran the next file (isolate: false): CI counted
      // those writes in turn-statements.test.ts.
      rt.orchestrator.fenced();
    },
  };
}

/** Reads an SSE stream until `until` says stop or the timeout passes. */
export async function readSse(
  url: string,
  o: { lastEventId?: number | string; until: (events: any[]) => boolean; timeoutMs?: number; token?: string },
): Promise<any[]> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), o.timeoutMs ?? 10_000);
  const events: any[] = [];
  try {
    const res = await fetch(url, {
      headers: { authorization: `Bearer ${o.token ?? TEST_TOKEN}`, ...(o.lastEventId !== undefined ? { 'last-event-id': String(o.lastEventId) } : {}) },
      signal: ac.signal,
    });
    if (!res.ok) throw new Error(`SSE ${res.status}: ${await res.text()}`);
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let buf = '';
    while (!o.until(events)) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const frame = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = frame.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
        const id = frame.split('\n').find((l) => l.startsWith('id: '));
        if (data) events.push({ ...JSON.parse(data), _sseId: id ? id.slice(4) : undefined });
        if (o.until(events)) break;
      }
    }
    ac.abort();
  } catch (e) {
    if (!ac.signal.aborted) throw e;
  } finally {
    clearTimeout(timer);
  }
  return events;
}

/** One JSON-RPC call to a child server: the error object instead of a throw, and `dead` when the process died before answering. */
export async function rpcOrDead(url: string, method: string, params: unknown): Promise<{ result?: any; error?: any; dead?: true }> {
  try {
    const res = await fetch(`${url}/api/gateway`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    return (await res.json()) as { result?: unknown; error?: unknown };
  } catch {
    return { dead: true };
  }
}

/** Starts `child-server.ts` in its own process (so a test can SIGKILL it); resolves with its URL. */
export async function startChildServer(o: { dataDir: string; configFile?: string; env?: Record<string, string> }) {
  // Like a launcher: the secrets (the token, DATABASE_URL) go over a pipe, never into the server's environment block.
  const { spawnWithSecrets } = await import('../../scripts/secrets.mjs');
  const child = spawnWithSecrets(process.execPath, childArgs('child-server'), {
    env: {
      ...process.env,
      CROSSTALK_DATA_DIR: o.dataDir,
      CROSSTALK_WORKSPACES: `${o.dataDir}-ws`,
      CROSSTALK_TOKEN: TEST_TOKEN,
      CROSSTALK_LOG_LEVEL: 'silent',
      ...(o.configFile ? { CROSSTALK_CONFIG: o.configFile } : {}),
      ...o.env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /LISTENING (\S+)/.exec(buf);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`child exited ${code} before listening`)));
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code, sig) => r(code ?? (sig ? 137 : null))));
  const rpc = async <T = any>(method: string, params: unknown = {}): Promise<T> => {
    const res = await fetch(`${url}/api/gateway`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const body = await res.json();
    if (body.error) throw Object.assign(new Error(`${method}: ${body.error.message}`), { rpc: body.error });
    return body.result as T;
  };
  return { url, child, exited, rpc, kill: () => child.kill('SIGKILL') };
}

/** Polls `fn` until it returns something truthy (then returns it), failing after `ms`. */
export async function until<T>(fn: () => Promise<T | undefined | null | false> | T | undefined | null | false, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * The event log's rows for a run or session once all of them are settled: on PostgreSQL a read hands out only rows
 * below the settled horizon (`pending` when a transaction of this database older than some row is still open — other
 * suites' transactions too, with files running side by side), so a single read right after a run can miss its last rows.
 */
export async function settledEvents(rt: FullRuntime, o: { runId?: string; sessionKey?: string; limit?: number }) {
  return until(async () => {
    const r = await rt.store.eventsAfter({ after: { id: 0 }, limit: o.limit ?? 500, ...(o.runId ? { runId: o.runId } : {}), ...(o.sessionKey ? { sessionKey: o.sessionKey } : {}) });
    return r.pending ? undefined : r.rows;
  }, 15_000);
}
