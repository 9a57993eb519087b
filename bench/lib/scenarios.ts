// The measurements themselves; each takes a running server and returns plain figures (no assertions).
import { RpcClient, subscribeSse, turn, type SseSubscription } from './http';
import type { ServerHandle } from './server';
import { mapLimit, sleep, summarize, type Summary } from './stats';

const elapsed = (t0: number) => performance.now() - t0;

/** (a) Sequential turns on one session: `agent` + `agent.wait`, timed end to end. */
export async function turnRoundTrip(rpc: RpcClient, o: { warmup: number; turns: number }): Promise<Summary & { errors: number }> {
  const sessionKey = 'agent:main:bench-roundtrip';
  let errors = 0;
  for (let i = 0; i < o.warmup; i++) await turn(rpc, sessionKey, `warm-up ${i}`);
  const samples: number[] = [];
  for (let i = 0; i < o.turns; i++) {
    const t0 = performance.now();
    const r = await turn(rpc, sessionKey, `ping ${i}`);
    samples.push(elapsed(t0));
    if (r.status !== 'ok') errors++;
  }
  return { ...summarize(samples), errors };
}

/** The floor under every turn: a trivial authorized JSON-RPC call (`agents.list`), sequential. */
export async function rpcFloor(rpc: RpcClient, calls: number): Promise<Summary> {
  for (let i = 0; i < 20; i++) await rpc.call('agents.list', {});
  const samples: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    await rpc.call('agents.list', {});
    samples.push(elapsed(t0));
  }
  return summarize(samples);
}

export interface ConcurrentResult {
  sessions: number;
  wallMs: number;
  ok: number;
  failed: number;
  firstFailure?: string;
}

/** (b) `n` new sessions, one turn each, all at once; wall time until every `agent.wait` has returned. */
export async function concurrentSessions(rpc: RpcClient, n: number, firstIndex: number): Promise<ConcurrentResult> {
  let ok = 0;
  let failed = 0;
  let firstFailure: string | undefined;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      try {
        const r = await turn(rpc, `agent:main:bench-${firstIndex + i}`, `hello ${i}`);
        if (r.status === 'ok') ok++;
        else {
          failed++;
          firstFailure ??= `${r.status}: ${r.error ?? ''}`;
        }
      } catch (e) {
        failed++;
        firstFailure ??= (e as Error).message;
      }
    }),
  );
  return { sessions: n, wallMs: elapsed(t0), ok, failed, firstFailure };
}

export interface HistoryResult {
  messages: number;
  first: Summary;
  deep: Summary;
  /** How many visible rows lie above the deep page. */
  deepOffset: number;
}

/** (e) `chat.history` page of 50: newest page, and a page reached by a cursor deep in the transcript. */
export async function historyPages(rpc: RpcClient, sessionKey: string, messages: number, samples: number): Promise<HistoryResult> {
  type Page = { messages: unknown[]; next_cursor: string | null };
  for (let i = 0; i < 10; i++) await rpc.call<Page>('chat.history', { sessionKey, limit: 50 });
  const first: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    await rpc.call<Page>('chat.history', { sessionKey, limit: 50 });
    first.push(elapsed(t0));
  }
  // Walk with the public cursor to ~90% of the way down; bounded by the row count.
  const target = Math.floor(messages * 0.9 * 0.8); // ~80% of rows are visible without includeTools
  const step = Math.min(200, Math.max(20, Math.floor(messages / 50)));
  let cursor: string | null = null;
  let offset = 0;
  for (let guard = 0; offset < target && guard < Math.ceil(messages / step) + 1; guard++) {
    const page: Page = await rpc.call<Page>('chat.history', { sessionKey, limit: step, ...(cursor ? { cursor } : {}) });
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
    offset += page.messages.length;
  }
  const deep: number[] = [];
  if (cursor) {
    for (let i = 0; i < 10; i++) await rpc.call<Page>('chat.history', { sessionKey, limit: 50, cursor });
    for (let i = 0; i < samples; i++) {
      const t0 = performance.now();
      await rpc.call<Page>('chat.history', { sessionKey, limit: 50, cursor });
      deep.push(elapsed(t0));
    }
  }
  return { messages, first: summarize(first), deep: summarize(deep), deepOffset: offset };
}

export interface FanoutPhase {
  runs: number;
  /** Distinct events the server emitted for these runs. */
  events: number;
  /** Events received, summed over subscribers. */
  deliveries: number;
  wallMs: number;
  deliveriesPerSec: number;
  eventsPerSec: number;
  /** emit (event `ts`) → receive, over every delivery. */
  latency: Summary;
  /** Deliveries a subscriber should have had but did not (0 expected). */
  missing: number;
}

interface ParsedEvent {
  id: number;
  runId: string;
  stream: string;
  ts: string;
  data: { phase?: string };
}

/**
 * (f) `subscribers` SSE clients on one session; runs driven on it. Phase "paced": one turn at a time.
 * Phase "burst": all runs enqueued at once as follow-ups, so the server emits back to back.
 */
export async function fanout(
  server: ServerHandle,
  rpc: RpcClient,
  o: { subscribers: number; pacedRuns: number; burstRuns: number },
): Promise<{ paced: FanoutPhase; burst: FanoutPhase }> {
  const sessionKey = 'agent:main:bench-fanout';
  const message = `/reply ${'streamed words for the fan-out benchmark '.repeat(4).trim()}`;
  // Create the session and warm the path before anyone listens.
  await turn(rpc, sessionKey, message);

  const runPhase = async (name: 'paced' | 'burst', runs: number): Promise<FanoutPhase> => {
    const received = Array.from({ length: o.subscribers }, () => ({ latencies: [] as number[], ended: new Set<string>(), ids: new Set<number>() }));
    const subs: SseSubscription[] = [];
    const url = `${server.baseUrl}/api/gateway/events?sessionKey=${encodeURIComponent(sessionKey)}`;
    for (let s = 0; s < o.subscribers; s++) {
      const bucket = received[s]!;
      subs.push(
        await subscribeSse(url, server.token, (e) => {
          let ev: ParsedEvent;
          try {
            ev = JSON.parse(e.data) as ParsedEvent;
          } catch {
            return;
          }
          bucket.latencies.push(e.receivedAt - Date.parse(ev.ts));
          bucket.ids.add(ev.id);
          if (ev.stream === 'lifecycle' && (ev.data?.phase === 'end' || ev.data?.phase === 'error')) bucket.ended.add(ev.runId);
        }),
      );
    }
    const runIds: string[] = [];
    const t0 = performance.now();
    try {
      if (name === 'paced') {
        for (let i = 0; i < runs; i++) {
          const r = await rpc.call<{ runId: string }>('agent', { sessionKey, message });
          runIds.push(r.runId);
          await rpc.call('agent.wait', { runId: r.runId, timeoutMs: 60_000 });
        }
      } else {
        for (let i = 0; i < runs; i++) {
          const r = await rpc.call<{ runId: string }>('agent', { sessionKey, message, queueMode: 'followup' });
          runIds.push(r.runId);
        }
        await mapLimit([...new Set(runIds)], 50, (runId) => rpc.call('agent.wait', { runId, timeoutMs: 120_000 }));
      }
      // Until every subscriber has seen every run end (bounded).
      const unique = [...new Set(runIds)];
      const deadline = performance.now() + 15_000;
      while (performance.now() < deadline && !received.every((b) => unique.every((id) => b.ended.has(id)))) await sleep(2);
    } finally {
      for (const s of subs) s.close();
    }
    const wallMs = elapsed(t0);
    const all = new Set<number>();
    for (const b of received) for (const id of b.ids) all.add(id);
    const deliveries = received.reduce((s, b) => s + b.ids.size, 0);
    return {
      runs,
      events: all.size,
      deliveries,
      wallMs,
      deliveriesPerSec: deliveries / (wallMs / 1000),
      eventsPerSec: all.size / (wallMs / 1000),
      latency: summarize(received.flatMap((b) => b.latencies)),
      missing: all.size * o.subscribers - deliveries,
    };
  };

  const paced = await runPhase('paced', o.pacedRuns);
  const burst = await runPhase('burst', o.burstRuns);
  return { paced, burst };
}
