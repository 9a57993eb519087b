// Event log + SSE: ids rise, seq per run from 1, reconnect with Last-Event-ID gets every event once, slow subscribers catch up.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, settledEvents, startTestServer, TEST_TOKEN, type TestServer, until } from '../testing/harness';
import { SUB_BUFFER_BYTES } from './bus';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ config: { agents: [{ id: 'main', tools: { exec: 'auto' } }] } });
});
afterAll(async () => {
  await s?.close();
});

const isEnd = (e: any) => e.stream === 'lifecycle' && (e.data.phase === 'end' || e.data.phase === 'error');

describe('SSE events', () => {
  it('streams a run live: lifecycle, message, assistant deltas, tool events with runId/seq/ts/sessionKey', async () => {
    const key = 'agent:main:sse-live';
    const reading = readSse(`${s.url}/api/gateway/events?sessionKey=${key}`, { until: (evs) => evs.some(isEnd) });
    await new Promise((r) => setTimeout(r, 50));
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply one two three four\n/tool exec {"command":"echo x"}' });
    const evs = await reading;
    expect(evs.every((e) => e.runId === runId && e.sessionKey === key && typeof e.ts === 'string' && (e._sseId === String(e.id) || e._sseId.endsWith(`-${e.id}`)))).toBe(true);
    expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => i + 1));
    expect(evs[0]).toMatchObject({ stream: 'lifecycle', data: { phase: 'start' } });
    const deltas = evs.filter((e) => e.stream === 'assistant').map((e) => e.data.delta);
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toContain('one two three four');
    expect(evs.filter((e) => e.stream === 'tool').map((e) => e.data.phase)).toEqual(['start', 'end']);
    expect(evs.filter((e) => e.stream === 'message').map((e) => e.data.message.kind)).toEqual(['message', 'message', 'tool_call', 'tool_result', 'message']);
    const ids = evs.map((e) => e.id);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
  });

  it('without Last-Event-ID the stream starts live (no history)', async () => {
    const key = 'agent:main:sse-live';
    const evs = await readSse(`${s.url}/api/gateway/events?sessionKey=${key}`, { until: () => false, timeoutMs: 200 });
    expect(evs).toEqual([]);
  });

  it('opened right after a run ended, a stream without Last-Event-ID starts live: none of that run’s events (PostgreSQL: its feed is idle then)', async () => {
    for (let i = 0; i < 5; i++) {
      const key = `agent:main:sse-after-${i}`;
      const old = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply old' });
      expect(await s.rpc('agent.wait', { runId: old.runId, timeoutMs: 5000 })).toMatchObject({ status: 'ok' });
      const ac = new AbortController();
      const res = await fetch(`${s.url}/api/gateway/events?sessionKey=${key}`, { headers: { authorization: `Bearer ${TEST_TOKEN}` }, signal: ac.signal });
      // The headers are back: the stream is subscribed.
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply new' });
      const reader = res.body!.getReader();
      const dec = new TextDecoder();
      let buf = '';
      const timer = setTimeout(() => ac.abort(), 5000);
      try {
        while (!buf.includes('"phase":"end"')) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
        }
      } finally {
        clearTimeout(timer);
        ac.abort();
      }
      const evs = buf.split('\n\n').filter((f) => f.includes('data: ')).map((f) => JSON.parse(f.split('\n').find((l) => l.startsWith('data: '))!.slice(6)));
      expect(evs.filter((e) => e.runId !== runId)).toEqual([]);
      expect(evs[0]).toMatchObject({ runId, seq: 1, stream: 'lifecycle', data: { phase: 'start' } });
      expect(evs.some(isEnd)).toBe(true);
    }
  });

  it('a client that drops and reconnects with Last-Event-ID receives every event once, in order', async () => {
    const key = 'agent:main:sse-drop';
    const url = `${s.url}/api/gateway/events?sessionKey=${key}`;
    const first = readSse(url, { until: (evs) => evs.length >= 5 });
    await new Promise((r) => setTimeout(r, 50));
    const runs: string[] = [];
    for (let i = 0; i < 3; i++) runs.push((await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: `/reply part ${i} of a longer reply`, queueMode: 'followup' })).runId);
    const a = await first; // dropped after 5 events, while runs go on
    for (const r of runs) await s.rpc('agent.wait', { runId: r });
    const lastRun = runs[runs.length - 1];
    const b = await readSse(url, { lastEventId: a[a.length - 1].id, until: (evs) => evs.some((e) => e.runId === lastRun && isEnd(e)) });
    const all = [...a, ...b];
    const ids = all.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
    // Compare with a full replay from the log.
    const full = await readSse(url, { lastEventId: 0, until: (evs) => evs.some((e) => e.runId === lastRun && isEnd(e)) });
    expect(ids).toEqual(full.map((e) => e.id));
    for (const r of runs) {
      const seqs = full.filter((e) => e.runId === r).map((e) => e.seq);
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    }
  });

  it('filters by runId', async () => {
    const key = 'agent:main:sse-run';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'x' });
    await s.rpc('agent.wait', { runId });
    const evs = await readSse(`${s.url}/api/gateway/events?runId=${runId}`, { lastEventId: 0, until: (e) => e.some(isEnd) });
    expect(evs.length).toBeGreaterThan(3);
    expect(evs.every((e) => e.runId === runId)).toBe(true);
  });

  it('refuses a bad sessionKey or Last-Event-ID', async () => {
    const h = { authorization: 'Bearer test-token' };
    expect((await fetch(`${s.url}/api/gateway/events?sessionKey=bad key`, { headers: h })).status).toBe(400);
    expect((await fetch(`${s.url}/api/gateway/events`, { headers: h })).status).toBe(400);
    expect((await fetch(`${s.url}/api/gateway/events?sessionKey=agent:main:main`, { headers: { ...h, 'last-event-id': 'abc' } })).status).toBe(400);
  });

  it('refuses a Last-Event-ID past the end of the log (never issued) as invalid_cursor, instead of skipping the events that take its place', async () => {
    const key = 'agent:main:future-cursor';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'one' });
    await s.rpc('agent.wait', { runId });
    const evs = await readSse(`${s.url}/api/gateway/events?sessionKey=${key}`, { lastEventId: '0', until: (e) => e.some(isEnd) });
    const last = evs[evs.length - 1]._sseId as string;
    const future = s.rt.store.dialect === 'postgres' ? last.replace(/^(\d+)-(\d+)$/, (_, tx, id) => `${BigInt(tx) + 1000n}-${id}`) : String(Number(last) + 10);
    for (const id of [future, s.rt.store.dialect === 'postgres' ? `${last.split('-')[0]}-${Number(last.split('-')[1]) + 10}` : String(Number(last) + 1_000_000)]) {
      const res = await fetch(`${s.url}/api/gateway/events?sessionKey=${key}`, { headers: { authorization: `Bearer ${TEST_TOKEN}`, 'last-event-id': id } });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error.data.code).toBe('invalid_cursor');
    }
    // The last cursor it issued is still good: a reconnect from it gets the next run's events, from its first.
    const next = readSse(`${s.url}/api/gateway/events?sessionKey=${key}`, { lastEventId: last, until: (e) => e.some(isEnd) });
    const r2 = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'two' });
    const got = await next;
    expect(got.filter((e) => e.runId === r2.runId).map((e) => e.seq)[0]).toBe(1);
  });
});

/**
 * `n` events of one run of the session, then its end, straight through the bus: a model's burst of text deltas is
 * coalesced (COALESCE_AFTER), so a long reply no longer makes thousands of events.
 */
async function emitMany(key: string, n: number): Promise<string> {
  const { bus } = s.rt;
  const runId = `run_many_${key.replace(/\W/g, '_')}`;
  bus.registerRun(runId, key, 0);
  for (let i = 0; i < n; i++) bus.emit(runId, 'tool', { phase: 'update', name: 'burst', i });
  bus.emit(runId, 'lifecycle', { phase: 'end', status: 'ok' });
  await bus.drain();
  bus.unregisterRun(runId);
  return runId;
}

describe('event bus', () => {
  it('a burst of text deltas is coalesced past the first 64 of a flush: a stream reader gets the exact text in far fewer events, live and replayed alike', async () => {
    const key = 'agent:main:burst';
    const live = readSse(`${s.url}/api/gateway/events?sessionKey=${key}`, { until: (evs) => evs.some(isEnd) });
    await new Promise((r) => setTimeout(r, 50));
    const words = Array.from({ length: 3000 }, (_, i) => `w${i}`).join(' ');
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: `/reply ${words}` });
    await s.rpc('agent.wait', { runId });
    const evs = await live;
    const deltas = evs.filter((e) => e.stream === 'assistant').map((e) => e.data.delta as string);
    expect(deltas.join('')).toBe(words);
    expect(deltas.length).toBeGreaterThanOrEqual(64); // the first 63 of the burst stay as they came; the 64th takes the rest
    expect(deltas.length).toBeLessThan(200); // before: one event per delta, ~3,000
    expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => i + 1));
    // Replayed from the log (the run's deltas folded at its end): the same events.
    const replayed = await readSse(`${s.url}/api/gateway/events?sessionKey=${key}`, { lastEventId: '0', until: (r) => r.some(isEnd) });
    expect(replayed.map((e) => [e.seq, e.stream, e.data.delta ?? null])).toEqual(evs.map((e) => [e.seq, e.stream, e.data.delta ?? null]));
  });

  it('takeBuffered hands out what is buffered at once, in order; an overflow after it resumes with no gap or duplicate', async () => {
    const key = 'agent:main:take-buffered';
    const { bus } = s.rt;
    const sub = bus.subscribe({ sessionKey: key });
    const runId = 'run_take_buffered';
    bus.registerRun(runId, key, 0);
    for (let i = 0; i < 10; i++) bus.emit(runId, 'tool', { phase: 'update', name: 'burst', i });
    await bus.drain();
    const first = await sub.next();
    const rest = sub.takeBuffered(100);
    expect([first!, ...rest].map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(sub.takeBuffered(100)).toEqual([]);
    // 2,500 more while nobody reads: the buffer overflows, and the catch-up starts after the last one taken.
    for (let i = 0; i < 2500; i++) bus.emit(runId, 'tool', { phase: 'update', name: 'burst', i });
    bus.emit(runId, 'lifecycle', { phase: 'end', status: 'ok' });
    await bus.drain();
    bus.unregisterRun(runId);
    const seqs: number[] = [];
    for (;;) {
      const ev = await Promise.race([sub.next(), new Promise<null>((r) => setTimeout(() => r(null), 10_000))]);
      if (!ev) break;
      seqs.push(ev.seq, ...sub.takeBuffered(50).map((e) => e.seq));
      if (seqs[seqs.length - 1] === 2511) break;
    }
    sub.close();
    expect(seqs).toEqual(seqs.map((_, i) => i + 11));
    expect(seqs[seqs.length - 1]).toBe(2511);
  });

  it('deltas that come one at a time (a model at its own pace) are each an event', async () => {
    const { bus } = s.rt;
    const runId = 'run_paced_deltas';
    bus.registerRun(runId, 'agent:main:paced', 0);
    for (let i = 0; i < 100; i++) {
      bus.emit(runId, 'assistant', { delta: `d${i} ` });
      await bus.drain();
    }
    bus.unregisterRun(runId);
    const rows = await settledEvents(s.rt, { runId, limit: 500 });
    expect(rows.filter((r) => r.stream === 'assistant')).toHaveLength(100);
  });

  it('a slow subscriber overflows its buffer and catches up from the log without gaps or duplicates', async () => {
    const key = 'agent:main:slow-sub';
    const { bus } = s.rt;
    const sub = bus.subscribe({ sessionKey: key });
    // Nobody reads while ~3000 events are emitted (the buffer holds 2000).
    await emitMany(key, 3000);
    const got: number[] = [];
    // Up to 10 s for each next event (the loop ends at the run's end event): on PostgreSQL the catch-up reads only rows
    // below the settled horizon, which another file's open transaction can hold back (CI got no event within 300 ms).
    for (;;) {
      const ev = await Promise.race([sub.next(), new Promise<null>((r) => setTimeout(() => r(null), 10_000))]);
      if (!ev) break;
      got.push(ev.seq);
      if (ev.stream === 'lifecycle' && ev.data.phase === 'end') break;
    }
    sub.close();
    expect(got.length).toBeGreaterThan(2000);
    expect(got).toEqual(got.map((_, i) => i + 1));
  });

  it('a slow subscriber\'s buffer is bounded by bytes, not only by count: big messages overflow it long before 2,000 events, and it still gets every event', async () => {
    const key = 'agent:main:slow-bytes';
    const { bus } = s.rt;
    const sub = bus.subscribe({ sessionKey: key });
    // 16 turns of 240 KiB each way: a few hundred events, ~11 MB of them (user row, deltas, assistant row).
    const runs: string[] = [];
    for (let i = 0; i < 16; i++) {
      const big = `${i} ${'x'.repeat(240 * 1024)}`;
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: big, queueMode: 'followup' });
      runs.push(runId);
    }
    for (const runId of runs) await s.rpc('agent.wait', { runId });
    await bus.drain();
    expect(sub.bufferedBytes).toBeLessThanOrEqual(SUB_BUFFER_BYTES);
    const seqs = new Map<string, number[]>();
    let ended = 0;
    let most = 0;
    while (ended < new Set(runs).size) {
      const ev = await Promise.race([sub.next(), new Promise<null>((r) => setTimeout(() => r(null), 5000))]);
      if (!ev) break;
      most = Math.max(most, sub.bufferedBytes);
      seqs.set(ev.runId, [...(seqs.get(ev.runId) ?? []), ev.seq]);
      if (ev.stream === 'lifecycle' && ev.data.phase === 'end') ended++;
    }
    sub.close();
    // The catch-up from the log is bounded the same way, and nothing was lost or repeated.
    expect(most).toBeLessThanOrEqual(SUB_BUFFER_BYTES);
    expect(ended).toBe(new Set(runs).size);
    for (const [, got] of seqs) expect(got).toEqual(got.map((_, i) => i + 1));
  });

  it('over HTTP: an SSE client that stops reading while a run emits ~3000 events gets every one, in order, once it reads again', async () => {
    const key = 'agent:main:slow-http';
    const { default: net } = await import('node:net');
    const sock = net.connect(Number(new URL(s.url).port), '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    sock.pause();
    sock.write(`GET /api/gateway/events?sessionKey=${key} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TEST_TOKEN}\r\n\r\n`);
    await until(() => (s.rt.bus as any).bySession.get(key)?.size === 1);
    await emitMany(key, 3000);
    sock.resume();
    const seqs: number[] = [];
    let buf = '';
    await new Promise<void>((resolve, reject) => {
      sock.on('data', (d: Buffer) => {
        buf += d.toString('utf8');
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const data = buf.slice(0, i).split('\n').find((l) => l.startsWith('data: '));
          buf = buf.slice(i + 2);
          if (!data) continue;
          const ev = JSON.parse(data.slice(6));
          seqs.push(ev.seq);
          if (ev.stream === 'lifecycle' && ev.data.phase === 'end') resolve();
        }
      });
      sock.on('error', reject);
    });
    sock.destroy();
    expect(seqs.length).toBeGreaterThan(3000);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  });

  it('a long-lived stream keeps one abort listener, not one per event', async () => {
    const { EventEmitter } = await import('node:events');
    const key = 'agent:main:listener-count';
    const sub = s.rt.bus.subscribe({ sessionKey: key });
    const ac = new AbortController();
    let n = 0;
    for (let i = 0; i < 5; i++) {
      // Wait for the next event before the run exists, so the subscriber really waits each time.
      const first = sub.next(ac.signal);
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: `turn ${i}` });
      let ev = await first;
      for (;;) {
        n++;
        if (!ev || (ev.runId === runId && ev.stream === 'lifecycle' && ev.data.phase === 'end')) break;
        ev = await sub.next(ac.signal);
      }
    }
    expect(n).toBeGreaterThan(5);
    expect(EventEmitter.getEventListeners(ac.signal, 'abort').length).toBeLessThanOrEqual(1);
    sub.close();
  });

  it('a listener that throws does not stop the others', async () => {
    const { bus } = s.rt;
    const seen: string[] = [];
    const off1 = bus.onEvent(() => {
      throw new Error('boom');
    });
    const off2 = bus.onEvent((e) => seen.push(e.runId));
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:listeners', message: 'x' });
    await s.rpc('agent.wait', { runId });
    await bus.drain();
    off1();
    off2();
    expect(seen.filter((r) => r === runId).length).toBeGreaterThan(2);
  });

  it('keeps a run\'s logged events from its first for its end to fold (loggedOf), not those of a run it did not see from its start', async () => {
    const { bus } = s.rt;
    const key = 'agent:main:logged-of';
    await s.rt.store.ensureSession({ key, agentId: 'main', kind: 'main' });
    bus.registerRun('run_logged_of', key);
    bus.emit('run_logged_of', 'lifecycle', { phase: 'start' });
    bus.emit('run_logged_of', 'assistant', { delta: 'a' });
    await bus.drain();
    bus.emit('run_logged_of', 'assistant', { delta: 'b' });
    await bus.drain();
    const kept = bus.loggedOf('run_logged_of')!;
    expect(kept.events.map((e) => e.seq)).toEqual([1, 2, 3]);
    const rows = await settledEvents(s.rt, { runId: 'run_logged_of' });
    expect(kept.ids.map((x) => x.id)).toEqual(rows.map((r) => r.id));
    bus.unregisterRun('run_logged_of');
    expect(bus.loggedOf('run_logged_of')).toBeNull();
    // Registered further on (a re-drive, an approval's decision): its earlier events are not known here.
    bus.registerRun('run_logged_of', key, 3);
    expect(bus.loggedOf('run_logged_of')).toBeNull();
    bus.unregisterRun('run_logged_of');
  });
});
