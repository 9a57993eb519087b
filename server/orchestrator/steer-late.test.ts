// A message the gateway answered as steered into a run (CONTRACT §3: "the returned runId is that run's") that the run
// ended before taking in (another process answered for the run's owner, which then ended the run, or died): it runs as
// a follow-up, and the run it was told points at it, so `agent.wait` on the answered id leads to its answer
// (`continuedIn`). Before (probe E, stop 59), that wait gave the run's own old reply and nothing more.
import crypto from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer, tmpDataDir } from '../testing/harness';

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('a message told it was steered into a run that ended first', () => {
  it('runs as a follow-up after a restart, and the run it was told points at it (continuedIn)', async () => {
    const dataDir = tmpDataDir('crosstalk-steer-late-');
    const s1 = await startTestServer({ dataDir, config: { agents: [{ id: 'main' }] } });
    const key = 'agent:main:steer-late';
    const first = await s1.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply first' });
    expect(await s1.rpc('agent.wait', { runId: first.runId })).toMatchObject({ status: 'ok', response: 'first' });
    // What another process's answer leaves when the run's owner ended the run before it took the message in (or died
    // then): a queued steer row naming that run.
    const late = crypto.randomUUID();
    await s1.rt.store.db
      .insertInto('runs')
      .values({ id: late, session_key: key, status: 'queued', input: JSON.stringify([{ ...JSON.parse((await s1.rt.store.getRun(first.runId))!.input)[0], content: '/reply late' }]), queue_mode: 'steer', response: null, error: null, created_at: new Date().toISOString(), started_at: null, ended_at: null, origin: JSON.stringify({ steerInto: first.runId }), webhook: null, last_seq: 0, merged_into: null })
      .execute();
    await s1.crash();
    const s2 = await startTestServer({ dataDir, config: { agents: [{ id: 'main' }] } });
    cleanups.push(() => s2.close());
    expect(await s2.rpc('agent.wait', { runId: late, timeoutMs: 10_000 })).toMatchObject({ status: 'ok', response: 'late' });
    expect(await s2.rpc('agent.wait', { runId: first.runId })).toMatchObject({ status: 'ok', response: 'first', continuedIn: late });
  }, 60_000);
});
