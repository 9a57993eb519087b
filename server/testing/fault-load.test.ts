// The fault suite's checks: owed callbacks (fault-load.ts owesCallback) on transcripts shaped like the ones it reads, and
// which channel doubles are the documented at-least-once resend after a kill (resentAfterKill), and the runs an SSE
// follower saw start and not end (fault-kit unended, checkFollower).
import { describe, expect, it } from 'vitest';
import { checkFollower, unended } from './fault-kit';
import { ARRIVAL_LAG_MS, owesCallback, RECORD_WINDOW_MS, resentAfterKill } from './fault-load';

const tag = 'pg-delegate-215';
const cb = `dg-${tag}.`;
const ask = { role: 'user', kind: 'message', content: `/tool delegate_agent {"agent_id":"researcher","mode":"detached","prompt":"/sleep 300\\n/reply ${cb}"}\ntag:${tag}.`, runId: 'run_p' };

describe('owesCallback', () => {
  it('a turn that called its tool owes the callback', () => {
    const h = [ask, { role: 'assistant', kind: 'tool_call', content: '', runId: 'run_p', tool: { args: { agent_id: 'researcher', mode: 'detached', prompt: `/sleep 300\n/reply ${cb}` } } }];
    expect(owesCallback(h, tag, cb)).toBe(true);
  });

  it('a message steered in before the first model step hid the /tool line (seed 3): nothing was sent, nothing is owed', () => {
    // As in seed 3's transcript: the turn's input, a steer into the same run, and the echo of the steer.
    const h = [ask, { role: 'user', kind: 'steer', content: 'm-pg-steer-234\ntag:pg-steer-234.', runId: 'run_p' }, { role: 'assistant', kind: 'message', content: 'echo: m-pg-steer-234', runId: 'run_p' }];
    expect(owesCallback(h, tag, cb)).toBe(false);
  });

  it('no tool call and no steer into the turn: still owed (a loss is not explained away)', () => {
    const h = [ask, { role: 'user', kind: 'steer', content: 'm-other', runId: 'run_other' }, { role: 'assistant', kind: 'message', content: 'hm', runId: 'run_p' }];
    expect(owesCallback(h, tag, cb)).toBe(true);
  });
});

describe('a channel send the platform got twice', () => {
  // Seed 200: the platform answered at 10:59:34.581, sqlite0 was SIGKILLed at 10:59:35.253, the send was made again at 11:00:05.502.
  const first = Date.parse('2026-11-26T10:59:34.581Z');
  const again = Date.parse('2026-11-26T11:00:05.502Z');
  const kill = Date.parse('2026-11-26T10:59:35.253Z');

  it('after a kill between the answer and its record: a resend (at least once to the platform), not a double', () => {
    expect(resentAfterKill([again, first], [kill])).toBe(true);
  });

  it('timed just after the kill: the killed process sent it, the platform’s loop timed it late (CI, seed 21)', () => {
    // sqlite0 SIGKILLed at 11:10:32.601; the platform timed the arrival at 32.619 and the restarted process's at 34.128.
    const k = Date.parse('2026-11-28T11:10:32.601Z');
    expect(resentAfterKill([Date.parse('2026-11-28T11:10:32.619Z'), Date.parse('2026-11-28T11:10:34.128Z')], [k])).toBe(true);
  });

  it('with no kill between, a kill well before the first arrival, or one long after it: a double', () => {
    expect(resentAfterKill([first, again], [])).toBe(false);
    expect(resentAfterKill([first, again], [first - ARRIVAL_LAG_MS - 1])).toBe(false);
    expect(resentAfterKill([first, again], [first + RECORD_WINDOW_MS + 1])).toBe(false);
    expect(resentAfterKill([first, first + 10], [first + 20])).toBe(false); // the kill came after both
  });

  it('three arrivals need a kill after each of the first two', () => {
    expect(resentAfterKill([first, again, again + 60_000], [kill])).toBe(false);
    expect(resentAfterKill([first, again, again + 60_000], [kill, again + 100])).toBe(true);
  });
});

describe('an SSE follower: runs seen start and not end (fault-kit unended, checkFollower)', () => {
  const ev = (runId: string, seq: number, stream: string, phase?: string) => ({ id: `${runId}:${seq}`, runId, seq, stream, data: phase ? { phase } : {} });
  const follower = (events: any[]) => ({ sessionKey: 'agent:main:f0', events, reconnects: 0, close: async () => undefined }) as unknown as Parameters<typeof checkFollower>[0];

  it('a run whose start it saw and whose end has not come yet is unended; once the end comes it is not', () => {
    const events = [ev('run_a', 1, 'lifecycle', 'start'), ev('run_a', 2, 'assistant')];
    const f = follower(events);
    expect(unended(f)).toEqual(['run_a']);
    expect(checkFollower(f)).toEqual(['agent:main:f0: SSE client saw run_a start but not end']);
    events.push(ev('run_a', 3, 'lifecycle', 'end'));
    expect(unended(f)).toEqual([]);
    expect(checkFollower(f)).toEqual([]);
  });

  it('a run it joined half-way, or that ended in an error, is not unended', () => {
    const f = follower([ev('run_b', 4, 'assistant'), ev('run_c', 1, 'lifecycle', 'start'), ev('run_c', 2, 'lifecycle', 'error')]);
    expect(unended(f)).toEqual([]);
    expect(checkFollower(f)).toEqual([]);
  });
});
