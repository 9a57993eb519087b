// The durable-runs check, counted from the public API: a burst of turns with mixed queue modes, async sends and
// callbacks on 3 processes sharing one PostgreSQL (and on 1 SQLite process); the process that owns running
// sessions is SIGKILLed mid-burst and restarted. Every accepted message must then be in its transcript exactly
// once and answered, every async send must call back exactly once, and SSE clients (one of them reconnecting to
// another process) must have seen contiguous, duplicate-free event sequences.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startChildServer, TEST_TOKEN, tmpDataDir, until } from '../testing/harness';

type Child = Awaited<ReturnType<typeof startChildServer>>;
const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const SESSIONS = 6;

const children: Child[] = [];
afterAll(() => {
  for (const c of children) c.kill();
});

async function boot(o: { dataDir: string; configFile: string; env: Record<string, string> }): Promise<Child> {
  const c = await startChildServer(o);
  if (process.env.BURST_DEBUG) c.child.stdout!.on('data', (d: Buffer) => fs.appendFileSync('/tmp/burst-child.log', `${c.child.pid} ${d}`));
  children.push(c);
  return c;
}

/** An SSE reader that follows a session across processes: on a dropped stream it reconnects to the next URL. */
function follow(urls: () => string[], sessionKey: string) {
  const events: any[] = [];
  let stop = false;
  let reconnects = 0;
  const done = (async () => {
    let cursor: string | undefined;
    for (let i = 0; !stop; i++) {
      const base = urls()[i % urls().length]!;
      const ac = new AbortController();
      const stopper = setInterval(() => stop && ac.abort(), 50);
      try {
        const res = await fetch(`${base}/api/gateway/events?sessionKey=${sessionKey}`, {
          headers: { authorization: `Bearer ${TEST_TOKEN}`, ...(cursor ? { 'last-event-id': cursor } : {}) },
          signal: ac.signal,
        });
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
        /* dropped: reconnect elsewhere */
      } finally {
        clearInterval(stopper);
      }
      if (!stop) {
        reconnects++;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  })();
  return {
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

async function burst(store: 'postgres' | 'sqlite', processes: number) {
  const t0 = Date.now();
  const mark = (what: string) => process.env.BURST_DEBUG && console.log(`${Date.now() - t0} ms: ${what}`);
  const dataDir = tmpDataDir('crosstalk-burst-');
  const configFile = path.join(dataDir, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify({ agents: [{ id: 'main' }, { id: 'researcher' }] }));
  const schema = `t_burst_${crypto.randomBytes(4).toString('hex')}`;
  const env: Record<string, string> =
    store === 'postgres' ? { DATABASE_URL: PG_URL, CROSSTALK_TEST_PG_SCHEMA: schema, CROSSTALK_PG_POOL: '4' } : {};
  if (process.env.BURST_DEBUG) env.CROSSTALK_LOG_LEVEL = 'info';
  // The first process migrates; the others join it.
  const procs: Child[] = [await boot({ dataDir, configFile, env })];
  for (let i = 1; i < processes; i++) procs.push(await boot({ dataDir: tmpDataDir(), configFile, env }));
  const live = () => procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null).map((p) => p.url);

  const rpcAt = async (url: string, method: string, params: unknown) => {
    const res = await fetch(`${url}/api/gateway`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const body = await res.json();
    if (body.error) throw Object.assign(new Error(`${method}: ${body.error.message}`), { rpc: body.error });
    return body.result;
  };
  const rpc = (method: string, params: unknown) => rpcAt(live()[0]!, method, params);

  const sse = [follow(() => live(), 'agent:main:s0'), follow(() => [...live()].reverse(), 'agent:main:s1')];
  await new Promise((r) => setTimeout(r, 200));

  const accepted: Array<{ tag: string; sessionKey: string; runId: string }> = [];
  const asyncSends: Array<{ caller: string; tag: string }> = [];
  const send = async (i: number, j: number, message: string, tag: string, queueMode?: string) => {
    const sessionKey = `agent:main:s${i}`;
    const urls = live();
    // A tag line of its own: the scripted model ignores it, the transcript check finds it.
    const r = await rpcAt(urls[(i + j) % urls.length]!, 'agent', { sessionKey, message: `${message}\ntag:${tag}.`, ...(queueMode ? { queueMode } : {}) });
    accepted.push({ tag, sessionKey, runId: r.runId });
  };

  // Part A: a long run per session (in flight at the kill), with follow-ups, collects, steers and async sends
  // aimed at it from every process.
  await Promise.all(Array.from({ length: SESSIONS }, (_, i) => send(i, 0, `/sleep 1500\n/reply long-${i}`, `long-${i}`)));
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, i) => {
      await send(i, 1, `/reply follow-${i}`, `follow-${i}`, 'followup');
      await send(i, 2, `steer-${i}`, `steer-${i}`, 'steer');
      const tag = `cb-${i}`;
      await send(i, 3, `/tool sessions_send {"sessionKey":"agent:researcher:t${i}","message":"/sleep 200\\n/reply ${tag}","mode":"async"}`, `send-${i}`, 'followup');
      asyncSends.push({ caller: `agent:main:s${i}`, tag });
      await send(i, 4, `/reply collect-a-${i}`, `collect-a-${i}`, 'collect');
      await send(i, 5, `/reply collect-b-${i}`, `collect-b-${i}`, 'collect');
    }),
  );

  mark('part A accepted');
  // Kill the process that owns the most running sessions (on SQLite: the only one), then restart it.
  let victim = procs[0]!;
  if (store === 'postgres') {
    const owners = await rpc('status', {});
    const pids = new Map<string, number>((owners.processes as any[]).map((p) => [p.id, p.pid]));
    const { Client } = await import('pg');
    const { pgConnectConfig } = await import('../store/db');
    const c = new Client({ ...pgConnectConfig(PG_URL), options: `-c search_path=${schema}` });
    await c.connect();
    const rows = (await c.query(`select owner, count(*)::int as n from sessions where owner is not null group by owner order by n desc`)).rows;
    await c.end();
    const pid = pids.get(rows[0]?.owner);
    victim = procs.find((p) => p.child.pid === pid) ?? procs[0]!;
    expect(rows.length).toBeGreaterThan(0);
  }
  victim.kill();
  await victim.exited;
  const restarted = await boot({ dataDir: store === 'sqlite' ? dataDir : tmpDataDir(), configFile, env });
  procs.splice(procs.indexOf(victim), 1, restarted);

  mark('restarted');
  // Part B: more turns after the restart, on every process.
  await Promise.all(Array.from({ length: SESSIONS }, (_, i) => send(i, 6, `/reply after-${i}`, `after-${i}`, 'followup')));

  mark('part B accepted');
  // Every accepted message is answered…
  for (const a of accepted) {
    mark(`waiting for ${a.tag} ${a.runId}`);
    const w = await rpc('agent.wait', { runId: a.runId, timeoutMs: 30_000 });
    expect({ tag: a.tag, status: w.status }).toEqual({ tag: a.tag, status: 'ok' });
    mark(`answered ${a.tag}`);
  }
  // …and every async send has called back (its callback turn ran) before we count.
  for (const s of asyncSends) {
    await until(async () => {
      const h = (await rpc('chat.history', { sessionKey: s.caller, limit: 200 })).messages as any[];
      return h.some((m) => m.kind === 'agent_callback_result' && m.content === s.tag) && h[0]?.content !== undefined;
    }, 20_000);
  }
  mark('callbacks in');
  await new Promise((r) => setTimeout(r, 500)); // would a duplicate still show up?

  for (let i = 0; i < SESSIONS; i++) {
    const h = ((await rpc('chat.history', { sessionKey: `agent:main:s${i}`, limit: 200, includeTools: true })).messages as any[]).reverse();
    const userSide = h.filter((m) => m.role === 'user');
    // Each accepted message is in its transcript exactly once (a collect turn holds both of its messages).
    for (const a of accepted.filter((x) => x.sessionKey === `agent:main:s${i}`)) {
      const hits = userSide.filter((m) => m.kind !== 'agent_callback_result' && m.content.includes(`tag:${a.tag}.`));
      expect({ tag: a.tag, count: hits.length }).toEqual({ tag: a.tag, count: 1 });
    }
    // Exactly one callback per async send.
    const cbs = userSide.filter((m) => m.kind === 'agent_callback_result');
    expect(cbs.map((m) => m.content)).toEqual([`cb-${i}`]);
  }

  // No session ever had two running runs: the store refuses it outright (a partial unique index), so a double
  // start would have failed a run above; and every run's lifecycle events say start…end in order.
  mark('transcripts checked');
  for (const f of sse) await f.close();
  mark('sse closed');
  // The session's log from its start, replayed over SSE up to the last event the client saw (a busy machine
  // replays slowly: read until it is there, not for a fixed time).
  const fromLog = async (key: string, lastId: unknown) => {
    const events: any[] = [];
    const res = await fetch(`${live()[0]}/api/gateway/events?sessionKey=${key}`, { headers: { authorization: `Bearer ${TEST_TOKEN}`, 'last-event-id': '0' } });
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let buf = '';
    const t = setTimeout(() => void reader.cancel(), 20_000);
    try {
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
      /* cancelled */
    }
    clearTimeout(t);
    void reader.cancel().catch(() => undefined);
    return events;
  };
  for (const [n, f] of sse.entries()) {
    const ids = f.events.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    // What the client saw is exactly the log's order from its first event on: no gap, no duplicate.
    const log = await fromLog(`agent:main:s${n}`, ids[ids.length - 1]);
    const start = log.findIndex((e) => e.id === ids[0]);
    expect(start).toBeGreaterThanOrEqual(0);
    expect(ids).toEqual(log.slice(start, start + ids.length).map((e) => e.id));
    for (const runId of new Set(log.map((e) => e.runId))) {
      const seqs = log.filter((e) => e.runId === runId).map((e) => e.seq);
      expect(seqs).toEqual(seqs.map((_, k) => k + 1));
    }
    expect(f.events.length).toBeGreaterThan(10);
  }
  return { reconnects: sse.map((f) => f.reconnects) };
}

describe('durable runs through a kill -9', () => {
  it('3 processes on one PostgreSQL: every accepted message answered once, callbacks once, SSE contiguous across a reconnect', async () => {
    await burst('postgres', 3);
  }, 90_000);

  it('1 process on SQLite, restarted after the kill: the same counts', async () => {
    await burst('sqlite', 1);
  }, 90_000);
});
