// The fault suite's check of owed callbacks (fault-load.ts owesCallback), on transcripts shaped like the ones it reads.
import { describe, expect, it } from 'vitest';
import { owesCallback } from './fault-load';

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
