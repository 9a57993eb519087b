// Remote A2A agents (CONTRACT §8): an agent with `a2a: {url, token}` runs its turns on an @a2a-js/sdk server; delegation, follow-ups, async callbacks, failures, cancel.
import { TaskState } from '@a2a-js/sdk';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer, until } from '../testing/harness';
import { CrosstalkA2AHandler } from './handler';
import { cardUrlOf } from './remote-model';
import { type RemoteAgent, startRemoteAgent } from './testing/remote-agent';

let s: TestServer | undefined;
let remote: RemoteAgent | undefined;
afterEach(async () => {
  await s?.close();
  await remote?.close();
  s = remote = undefined;
});

async function setup(o: { streaming?: boolean } = {}) {
  remote = await startRemoteAgent({ token: 'remote-secret', ...o });
  // The remote is on loopback: allowed here as for webhooks (remote-guard.test.ts shows it refused by default).
  s = await startTestServer({ config: { webhooks: { allowPrivateNetwork: true }, agents: [{ id: 'main' }, { id: 'remote', a2a: { url: remote.url, token: 'remote-secret' } }] } });
  return { s, remote };
}

const wait = (srv: TestServer, runId: string) => srv.rpc<{ status: string; response?: string; error?: string }>('agent.wait', { runId, timeoutMs: 20_000 });

async function turn(srv: TestServer, sessionKey: string, message: string) {
  const { runId } = await srv.rpc<{ runId: string }>('agent', { sessionKey, message });
  return wait(srv, runId);
}

/** The opaque contextId our side sent for a session (the echo remote names it in its reply). */
const CTX = 'ctx-[0-9a-f-]{36}';
const contextOf = (reply: string) => /^remote\[(ctx-[0-9a-f-]{36})\]/.exec(reply)![1]!;

/** The JSON a scripted step reported for a tool: `<tool>: <json>`. */
const toolResult = (response: string | undefined, tool: string) => JSON.parse(response!.slice(`${tool}: `.length));

describe('remote A2A agents', () => {
  it('card URLs: a base URL gets /.well-known/agent-card.json, a .json URL is the card', () => {
    expect(cardUrlOf('http://h:1/a2a/main')).toBe('http://h:1/a2a/main/.well-known/agent-card.json');
    expect(cardUrlOf('http://h:1/cards/x.json')).toBe('http://h:1/cards/x.json');
  });

  it('delegate_agent reaches the remote, and a follow-up by conversation_id continues the same A2A context', async () => {
    const { s, remote } = await setup();
    const first = toolResult((await turn(s, 'agent:main:main', '/tool delegate_agent {"agent_id":"remote","prompt":"hello remote"}')).response, 'delegate_agent');
    expect(first.status).toBe('ok');
    const cid = first.conversation_id as string;
    expect(cid).toMatch(/^agent:remote:subagent:/);
    expect(first.response).toMatch(new RegExp(`^remote\\[${CTX}\\] #1: hello remote$`));
    const ctx = contextOf(first.response);
    const follow = toolResult((await turn(s, 'agent:main:main', `/tool delegate_agent {"conversation_id":"${cid}","prompt":"again"}`)).response, 'delegate_agent');
    expect(follow.response).toBe(`remote[${ctx}] #2: again`);
    expect(remote.executor.turns.get(ctx)).toBe(2);
    // Its replies land in its session.
    const { messages } = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: cid });
    expect(messages.map((m) => m.content)).toContain(`remote[${ctx}] #2: again`);
    const { agents } = await s.rpc<{ agents: any[] }>('agents.list');
    expect(agents.find((a) => a.agentId === 'remote').remote).toEqual({ a2a: remote.url });
  });

  it('a sync agents_message to the remote answers with its reply; an async sessions_send gets its callback', async () => {
    const { s } = await setup();
    const sync = toolResult((await turn(s, 'agent:main:main', '/tool agents_message {"agentId":"remote","message":"yo"}')).response, 'agents_message');
    expect(sync).toMatchObject({ status: 'ok' });
    expect(sync.response).toMatch(new RegExp(`^remote\\[${CTX}\\] #1: yo$`));
    const ctx = contextOf(sync.response);
    const sent = toolResult((await turn(s, 'agent:main:main', '/tool sessions_send {"sessionKey":"agent:remote:main","message":"ping","mode":"async"}')).response, 'sessions_send');
    expect(sent.status).toBe('accepted');
    const callback = await until(async () => {
      const { messages } = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:main' });
      return messages.find((m) => m.kind === 'agent_callback_result');
    });
    expect(callback.content).toBe(`remote[${ctx}] #2: ping`);
  });

  for (const streaming of [true, false]) {
    it(`a remote task that needs input is answered by the session's next turn, in that task (${streaming ? 'streaming' : 'polled'})`, async () => {
      const { s, remote } = await setup({ streaming });
      const key = `agent:remote:ask-${streaming}`;
      const asked = await turn(s, key, 'please ask me something');
      const taskId = /^task (\S+) asks: which colour\?$/.exec(asked.response ?? '')?.[1];
      expect(taskId, asked.response).toBeTruthy();
      // Before: a new task ("remote[…] #2: blue"), the question left unanswered.
      expect((await turn(s, key, 'blue')).response).toBe(`task ${taskId} got: blue`);
      // Answered, the task is done: the next turn opens a new one.
      expect((await turn(s, key, 'thanks')).response).toMatch(/^remote\[ctx-[0-9a-f-]{36}\] #2: thanks$/);
    });
  }

  it('works with a remote that does not stream (polling its task)', async () => {
    const { s } = await setup({ streaming: false });
    const done = await turn(s, 'agent:remote:main', 'plain');
    expect(done.status).toBe('ok');
    expect(done.response).toMatch(new RegExp(`^remote\\[${CTX}\\] #1: plain$`));
  });

  it('a remote failure is a model-style error; cancel reaches the remote', async () => {
    const { s, remote } = await setup();
    const failed = await turn(s, 'agent:remote:main', 'please explode');
    expect(failed.status).toBe('error');
    expect(failed.error).toContain('kaboom');

    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:remote:other', message: 'slow one' });
    await until(() => remote.executor.started.includes('slow one'));
    await s.rpc('agent.cancel', { runId });
    expect(await wait(s, runId)).toMatchObject({ status: 'error', error: 'cancelled' });
    await until(() => remote.executor.cancelled.length === 1);
  });

  it('cancel reaches a remote that does not stream too (its task is sent without blocking, so its id is known)', async () => {
    const { s, remote } = await setup({ streaming: false });
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:remote:poll-cancel', message: 'slow one' });
    await until(() => remote.executor.started.includes('slow one'));
    await new Promise((r) => setTimeout(r, 300));
    await s.rpc('agent.cancel', { runId });
    expect(await wait(s, runId)).toMatchObject({ status: 'error', error: 'cancelled' });
    // Before: the run ended here, and the remote's task went on working (a blocking send gave no task id to cancel).
    await until(() => remote.executor.cancelled.length === 1);
  });

  it('a remote redeployed with another card (streaming off) is read again after a failed turn, not kept until a restart', async () => {
    const { s: srv, remote: first } = await setup();
    expect(await turn(srv, 'agent:remote:main', 'before')).toMatchObject({ status: 'ok' });
    const port = Number(new URL(first.url).port);
    await first.close();
    remote = await startRemoteAgent({ token: 'remote-secret', streaming: false, port });
    // The card read before says it streams: this turn fails on it…
    expect(await turn(srv, 'agent:remote:main', 'during')).toMatchObject({ status: 'error' });
    // …and the next one reads the card again. Before: every turn failed ("Streaming is not supported") until a restart.
    expect(await turn(srv, 'agent:remote:main', 'after')).toMatchObject({ status: 'ok', response: expect.stringContaining('after') });
  });

  it('a remote agent that is its own gateway (a loop of remote agents) stops at the delegation depth, it does not loop forever', async () => {
    s = await startTestServer({ config: { webhooks: { allowPrivateNetwork: true }, agents: [{ id: 'main' }, { id: 'self', a2a: { url: 'http://127.0.0.1:9/a2a/self', token: TEST_TOKEN, timeoutMs: 20_000 } }] } });
    // Its URL is known once it serves: the agent points at its own gateway.
    s.rt.config.agents.find((a) => a.id === 'self')!.a2a!.url = `${s.url}/a2a/self`;
    const done = await turn(s, 'agent:self:main', 'loop?');
    // Before: each turn started the next (2,215 runs in 25 s on a probe's machine) until the process was killed.
    expect(done.status).toBe('error');
    expect(done.error).toMatch(/limit_exceeded/);
    const runs = await s.rt.store.db.selectFrom('runs').select('id').execute();
    expect(runs.length).toBe(1 + 3); // ours, and one per hop up to limits.maxDelegateDepth (3); the 4th hop is refused before it runs
    expect(s.rt.orchestrator.activeRunCount()).toBe(0);
  });

  for (const race of [false, true]) {
    it(`a far task that waited on an approval and then ended by itself: the next turn lands its result once and goes as a new task (${race ? 'it ends between our look and our send' : 'ended before the turn'})`, async () => {
      const far = await startTestServer();
      try {
        s = await startTestServer({ config: { webhooks: { allowPrivateNetwork: true }, agents: [{ id: 'main' }, { id: 'peer', a2a: { url: `${far.url}/a2a/main`, token: TEST_TOKEN } }] } });
        const key = 'agent:peer:main';
        const asked = await turn(s, key, '/tool exec {"command":"echo from-far"}');
        expect(asked.response).toMatch(/^Waiting for approval: exec/);
        // The approval is resolved on the far side: its task goes on and completes by itself (CONTRACT §8).
        const [pending] = (await far.rpc<{ approvals: any[] }>('approvals.list', {})).approvals;
        await far.rpc('approvals.resolve', { approvalId: pending.approvalId, decision: 'allow_once' });
        const farDone = await wait(far, pending.runId);
        expect(farDone.status).toBe('ok');
        // The race: our look says it still waits (as it did a moment before), the send finds it ended and is refused.
        const real = CrosstalkA2AHandler.prototype.getTask;
        const looks = vi.spyOn(CrosstalkA2AHandler.prototype, 'getTask');
        if (race)
          looks.mockImplementationOnce(async function (this: CrosstalkA2AHandler, ...args) {
            const task = await real.apply(this, args);
            return { ...task, status: { ...task.status!, state: TaskState.TASK_STATE_INPUT_REQUIRED } };
          });
        // Before: the run ended "task run_… is in a terminal state (TASK_STATE_COMPLETED) and cannot be modified", the
        // message never reached the far side, and the far task's result never landed here.
        const next = await turn(s, key, 'what next?');
        expect(next).toMatchObject({ status: 'ok', response: `${farDone.response}\n\necho: what next?` });
        expect(looks).toHaveBeenCalledTimes(race ? 2 : 1); // the race: a second look after the refusal
        const again = await turn(s, key, 'and again');
        expect(again).toMatchObject({ status: 'ok', response: 'echo: and again' });
        // Far: each message once, in the one context; here: the far result once.
        const farKey = (await far.rpc<{ sessions: any[] }>('sessions.list', { agentId: 'main' })).sessions.map((x) => x.sessionKey).find((k: string) => k.startsWith('agent:main:a2a:'));
        const farRows = (await far.rpc<{ messages: any[] }>('chat.history', { sessionKey: farKey })).messages.filter((m) => m.role === 'user').map((m) => m.content).reverse();
        expect(farRows).toEqual(['/tool exec {"command":"echo from-far"}', 'what next?', 'and again']);
        const ours = (await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: key })).messages.map((m) => m.content);
        expect(ours.filter((c: string) => c.includes(farDone.response!))).toHaveLength(1);
      } finally {
        vi.restoreAllMocks();
        await far.close();
      }
    });
  }

  it('a crosstalk agent can be the remote of another crosstalk gateway (our A2A server, our A2A client)', async () => {
    const far = await startTestServer();
    try {
      s = await startTestServer({ config: { webhooks: { allowPrivateNetwork: true }, agents: [{ id: 'main' }, { id: 'peer', a2a: { url: `${far.url}/a2a/main`, token: TEST_TOKEN } }] } });
      const done = await turn(s, 'agent:peer:main', 'hello across');
      expect(done).toMatchObject({ status: 'ok', response: 'echo: hello across' });
      // On the far side the turn ran in one A2A context with an opaque id, not named after our session.
      const { sessions } = await far.rpc<{ sessions: any[] }>('sessions.list', { agentId: 'main' });
      const keys = sessions.map((x) => x.sessionKey).filter((k: string) => k.startsWith('agent:main:a2a:'));
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatch(new RegExp(`^agent:main:a2a:${CTX}$`));
      expect(keys[0]).not.toContain('peer');
      const { messages } = await far.rpc<{ messages: any[] }>('chat.history', { sessionKey: keys[0] });
      expect(messages.map((m) => m.content).reverse()).toEqual(['hello across', 'echo: hello across']);
      // A far run that waits on an approval: its task is input-required while the stream stays open. Our turn ends
      // with its question (before: the run hung until the far side's approval was decided, up to timeoutMs).
      const asked = await turn(s, 'agent:peer:main', '/tool exec {"command":"echo far"}');
      expect(asked.status).toBe('ok');
      expect(asked.response).toMatch(/^Waiting for approval: exec/);
      const [pending] = (await far.rpc<{ approvals: any[] }>('approvals.list', {})).approvals;
      expect(pending).toMatchObject({ tool: 'exec' });
    } finally {
      await far.close();
    }
  });
});
