// A re-drive makes the run's event log whole (CONTRACT §3, §4): a process SIGKILLed after committing rows and before the
// bus wrote their events leaves rows with no `message` event (or a run with no `lifecycle` `start`); the process that
// re-drives the run emits them, once, and the run's replay has every row exactly once and seq 1..n with no gap.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { PendingEvent } from '../events/types';
import { readSse, rpcOrDead, settledEvents, startChildServer, startTestServer, tmpDataDir, until } from '../testing/harness';
import { storeUnderTest } from '../testing/store-under-test';
import { mendLog, type RunDeps } from './run-loop';
import type { ActiveRun } from './types';

const store = storeUnderTest();
/** Both processes' store: SQLite restarted on the data dir, or PostgreSQL taken over (a dead process found quickly). */
const storeEnv = (): Record<string, string> =>
  store === 'postgres'
    ? {
        DATABASE_URL: process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test',
        CROSSTALK_TEST_PG_SCHEMA: `t_redrive_${crypto.randomBytes(4).toString('hex')}`,
        CROSSTALK_PG_POOL: '4',
        CROSSTALK_HEARTBEAT_MS: '200',
        CROSSTALK_DEAD_AFTER_MS: '1500',
        CROSSTALK_SWEEP_MS: '100',
      }
    : {};

const call = rpcOrDead;

const isEnd = (e: any) => e.stream === 'lifecycle' && (e.data.phase === 'end' || e.data.phase === 'error');

/**
 * Sends `message` to a process killed at `failpoint`, then the same idempotency key to the one after it: the run's
 * answer, its rows, and its events replayed (by run and by session) from the start of the log.
 */
async function crashAndRedrive(failpoint: string, message: string) {
  const dataDir = tmpDataDir();
  const configFile = path.join(dataDir, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify({ agents: [{ id: 'main', tools: { exec: 'auto' } }] }));
  const env = storeEnv();
  const sessionKey = 'agent:main:main';
  const params = { sessionKey, message, idempotencyKey: `k-${crypto.randomUUID()}` };
  const a = await startChildServer({ dataDir, configFile, env: { ...env, CROSSTALK_FAILPOINTS: failpoint } });
  try {
    await call(a.url, 'agent', params); // answered or not: the process dies at the failpoint either way
    expect(await a.exited).toBe(137);
  } finally {
    a.kill();
  }
  const b = await startChildServer({ dataDir, configFile, env });
  try {
    const again = await call(b.url, 'agent', params);
    expect(again.error).toBeUndefined();
    const runId = again.result.runId as string;
    const wait = await b.rpc<{ status: string; response: string }>('agent.wait', { runId, timeoutMs: 60_000 });
    const rows = (await b.rpc<{ messages: any[] }>('chat.history', { sessionKey, includeTools: true, limit: 200 })).messages.reverse().filter((m) => m.runId === runId);
    const byRun = await readSse(`${b.url}/api/gateway/events?runId=${runId}`, { lastEventId: 0, until: (evs) => evs.some(isEnd), timeoutMs: 20_000 });
    const bySession = (await readSse(`${b.url}/api/gateway/events?sessionKey=${sessionKey}`, { lastEventId: 0, until: (evs) => evs.some((e) => e.runId === runId && isEnd(e)), timeoutMs: 20_000 })).filter((e) => e.runId === runId);
    return { runId, wait, rows, byRun, bySession };
  } finally {
    b.kill();
    await b.exited;
  }
}

/** Every row of the run has exactly one `message` event (carrying that row), one start and one end, seq 1..n. */
function expectWholeLog(events: any[], rows: any[]) {
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  expect(events.filter((e) => e.stream === 'lifecycle' && e.data.phase === 'start')).toHaveLength(1);
  expect(events.filter(isEnd)).toHaveLength(1);
  const messages = events.filter((e) => e.stream === 'message').map((e) => e.data.message);
  expect(messages.map((m) => m.id).sort((x, y) => x - y)).toEqual(rows.map((r) => r.id));
  for (const r of rows) expect(messages.find((m) => m.id === r.id)).toEqual(r);
}

describe(`a re-drive makes the run's event log whole (${store})`, () => {
  it('killed at tool_calls.written: the tool_call row gets its message event on the re-drive; every row has one, the run one start', async () => {
    const { wait, rows, byRun, bySession } = await crashAndRedrive('tool_calls.written', '/tool exec {"command":"echo A"}');
    expect(wait.status).toBe('ok');
    expect(rows.map((r) => r.kind)).toEqual(['message', 'tool_call', 'tool_result', 'message']);
    expectWholeLog(byRun, rows);
    expect(bySession.map((e) => [e.seq, e.stream])).toEqual(byRun.map((e) => [e.seq, e.stream]));
  }, 120_000);

  it("killed right after accepting, before the bus's batch was written: the run's start and its user row's message event come with the re-drive", async () => {
    const { wait, rows, byRun, bySession } = await crashAndRedrive('run.started', '/sleep 200\n/reply t9');
    expect(wait).toMatchObject({ status: 'ok', response: 't9' });
    expect(rows.map((r) => [r.role, r.kind])).toEqual([['user', 'message'], ['assistant', 'message']]);
    expectWholeLog(byRun, rows);
    // The start comes first: nothing of the run was logged before the crash.
    expect(byRun[0]).toMatchObject({ seq: 1, stream: 'lifecycle', data: { phase: 'start', agentId: 'main' } });
    expect(bySession.map((e) => [e.seq, e.stream])).toEqual(byRun.map((e) => [e.seq, e.stream]));
  }, 120_000);
});

describe(`the re-drive's mend in the process that wrote the run before (${store})`, () => {
  it("an earlier copy's event still being written here is waited for, not emitted again", async () => {
    const s = await startTestServer();
    try {
      const { bus, store: st } = s.rt;
      const sessionKey = 'agent:main:mend';
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey, message: '/reply hi' });
      await s.rpc('agent.wait', { runId });
      const user = (await s.rpc<{ messages: any[] }>('chat.history', { sessionKey })).messages.find((m) => m.role === 'user');
      const logged = async () => (await settledEvents(s.rt, { runId })).filter((e) => e.stream === 'message' && JSON.parse(e.data).message.id === user.id).length;
      await until(async () => (await logged()) === 1);
      // The user row's event is lost from the log, and an earlier copy of the run in this process is writing it again
      // (a batch tried again after a lost connection) when the re-drive looks at the log.
      await st.db.deleteFrom('events').where('run_id', '=', runId).where('stream', '=', 'message').where('seq', '=', 2).execute();
      expect(await logged()).toBe(0);
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let held = false;
      const real = st.insertEvents.bind(st);
      st.insertEvents = (async (events: PendingEvent[], o: Parameters<typeof real>[1]) => {
        if (events.some((e) => e.runId === runId)) {
          held = true;
          await gate;
        }
        return real(events, o);
      }) as typeof real;
      try {
        bus.registerRun(runId, sessionKey, await st.maxSeq(runId));
        bus.emit(runId, 'message', { message: user });
        await until(() => held);
        const row = (await st.getRun(runId))!;
        const run = { id: runId, sessionKey, agent: { id: 'main' } } as unknown as ActiveRun;
        const mending = mendLog({ bus, store: st, log: s.rt.log } as unknown as RunDeps, run, row);
        await new Promise((r) => setTimeout(r, 100));
        release();
        await mending;
        await bus.drain();
      } finally {
        st.insertEvents = real;
        bus.unregisterRun(runId);
      }
      expect(await logged()).toBe(1);
    } finally {
      await s.close();
    }
  });
});
