// The A2A server's tasks (CONTRACT §8), driven by the official @a2a-js/sdk client over real HTTP: send, stream, approvals,
// elicitation, cancel, resubscribe, push configs. The card, auth and the JSON-RPC dialects: a2a-wire.test.ts.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { type StreamResponse, type Task, TaskState } from '@a2a-js/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, tmpDataDir, until } from '../testing/harness';
import { textOf } from './tasks';
import { asTask, client, message, postA2A, stateOfResp } from './testing/a2a-client';

const STDIO_SERVER = path.join(import.meta.dirname, '..', 'mcp', 'testing', 'stdio-server.mjs');

let s: TestServer | undefined;
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0)) await f();
  await s?.close();
  s = undefined;
});

describe('A2A server', () => {
  it('a blocking send runs a turn in agent:<id>:a2a:<contextId> and completes with the response as an artifact; a follow-up shares the context', async () => {
    s = await startTestServer();
    const c = await client(s);
    const task = asTask(await c.sendMessage(message('hello there', 'ctx-1')));
    expect(task.contextId).toBe('ctx-1');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task.status?.message)).toBe('echo: hello there');
    expect(task.artifacts[0]?.parts[0]?.content).toEqual({ $case: 'text', value: 'echo: hello there' });
    const again = asTask(await c.sendMessage(message('second', 'ctx-1')));
    expect(again.id).not.toBe(task.id);
    const { messages } = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:a2a:ctx-1' });
    expect(messages.map((m) => m.content).reverse()).toEqual(['hello there', 'echo: hello there', 'second', 'echo: second']);
    const { sessions } = await s.rpc<{ sessions: any[] }>('sessions.list', { kind: 'channel' });
    expect(sessions.map((x) => x.sessionKey)).toContain('agent:main:a2a:ctx-1');
    expect((await c.getTask({ tenant: '', id: task.id })).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    // A message from another agent is a hand-off (CONTRACT §9): a session_message delivery, answered when its run ended ok.
    const { deliveries } = await s.rpc<{ deliveries: any[] }>('deliveries.list', { sessionKey: 'agent:main:a2a:ctx-1', kind: 'session_message' });
    expect(deliveries).toHaveLength(2);
    expect(deliveries.map((d) => d.runId).sort()).toEqual([task.id, again.id].sort());
    for (const d of deliveries) expect(d).toMatchObject({ kind: 'session_message', state: 'answered', to: { sessionKey: 'agent:main:a2a:ctx-1' } });
  });

  it('a message naming a taskId: an unknown one is TaskNotFound, one of another context is refused, an ended one is refused, a waiting one takes it', async () => {
    s = await startTestServer();
    const c = await client(s);
    const first = asTask(await c.sendMessage(message('/tool exec {"command":"echo waits"}', 'ctx-task')));
    expect(first.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const next = asTask(await c.sendMessage({ ...message('second', '', first.id), configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true } }));
    expect(next).toMatchObject({ id: first.id, contextId: 'ctx-task' });
    const { approvals } = await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: 'agent:main:a2a:ctx-task' });
    await s.rpc('approvals.resolve', { approvalId: approvals[0].approvalId, decision: 'allow_once' });
    await until(async () => (await c.getTask({ tenant: '', id: first.id })).status?.state === TaskState.TASK_STATE_COMPLETED);
    const err = (p: Promise<unknown>) => p.then(() => null, (e: Error) => e);
    // Ended: refused as the SDK's own handler refuses it (before: a new task under another id, the one named dropped).
    const ended = await err(c.sendMessage(message('third', '', first.id)));
    expect([ended?.constructor.name, ended?.message]).toEqual(['JsonRpcUnsupportedOperationError', expect.stringMatching(/terminal state/)]);
    expect((await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:a2a:ctx-task' })).messages.map((m) => m.content)).not.toContain('third');
    expect((await err(c.sendMessage(message('lost', 'ctx-task', 'run_nope'))))?.constructor.name).toBe('JsonRpcTaskNotFoundError');
    expect((await err(c.sendMessage(message('elsewhere', 'ctx-other', first.id))))?.message).toMatch(/another contextId/);
    expect((await s.rpc<{ sessions: Array<{ sessionKey: string }> }>('sessions.list', { kind: 'channel' })).sessions.map((x) => x.sessionKey)).not.toContain('agent:main:a2a:ctx-other');
  });

  it('a contextId in capitals comes back as the client spelled it, on the send and on get; its session key is lowercased', async () => {
    s = await startTestServer();
    const c = await client(s);
    const task = asTask(await c.sendMessage(message('mixed case', 'Ctx-ABC')));
    expect(task.contextId).toBe('Ctx-ABC');
    expect((await c.getTask({ tenant: '', id: task.id })).contextId).toBe('Ctx-ABC');
    const { messages } = await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:a2a:ctx-abc' });
    expect(messages.map((m) => m.content).reverse()).toEqual(['mixed case', 'echo: mixed case']);
  });

  it('streams a task from submitted to completed', async () => {
    s = await startTestServer();
    const c = await client(s);
    const events: StreamResponse[] = [];
    for await (const e of c.sendMessageStream(message('/reply first line\n/reply second line', 'ctx-stream'))) events.push(e);
    expect(events[0]?.payload?.$case).toBe('task');
    const states = events.map(stateOfResp).filter((x) => x !== undefined);
    expect(states).toContain(TaskState.TASK_STATE_WORKING);
    expect(states[states.length - 1]).toBe(TaskState.TASK_STATE_COMPLETED);
    const artifact = events.find((e) => e.payload?.$case === 'artifactUpdate');
    expect(artifact?.payload?.$case === 'artifactUpdate' && artifact.payload.value.artifact?.parts[0]?.content).toEqual({ $case: 'text', value: 'first line\nsecond line' });
  });

  it('a task that waits on an approval is input-required, then completes by itself once it is resolved over JSON-RPC', async () => {
    s = await startTestServer();
    const c = await client(s);
    const events: StreamResponse[] = [];
    let resolved = false;
    for await (const e of c.sendMessageStream(message('/tool exec {"command":"echo approved-run"}', 'ctx-approval'))) {
      events.push(e);
      if (!resolved && stateOfResp(e) === TaskState.TASK_STATE_INPUT_REQUIRED) {
        resolved = true;
        const { approvals } = await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: 'agent:main:a2a:ctx-approval' });
        await s.rpc('approvals.resolve', { approvalId: approvals[0].approvalId, decision: 'allow_once' });
      }
    }
    const states = events.map(stateOfResp).filter((x) => x !== undefined);
    const inputAt = states.indexOf(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(inputAt).toBeGreaterThan(0);
    expect(states.slice(inputAt + 1)).toContain(TaskState.TASK_STATE_WORKING);
    expect(states[states.length - 1]).toBe(TaskState.TASK_STATE_COMPLETED);
    const last = events[events.length - 1]!;
    expect(last.payload?.$case === 'statusUpdate' && textOf(last.payload.value.status?.message)).toContain('approved-run');

    // A blocking send returns at input-required; the task goes on to completed with no new message.
    const blocked = asTask(await c.sendMessage(message('/tool exec {"command":"echo later"}', 'ctx-approval-2')));
    expect(blocked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const { approvals } = await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: 'agent:main:a2a:ctx-approval-2' });
    await s.rpc('approvals.resolve', { approvalId: approvals[0].approvalId, decision: 'allow_once' });
    await until(async () => (await c.getTask({ tenant: '', id: blocked.id })).status?.state === TaskState.TASK_STATE_COMPLETED);
  });

  it("a task whose standard delegate waits on an approval is input-required too: get, stream and a blocking send say so; it completes once it is resolved", async () => {
    s = await startTestServer({ config: { agents: [{ id: 'main' }, { id: 'researcher' }] } });
    const c = await client(s);
    const ask = (ctx: string) => message(`/tool delegate_agent ${JSON.stringify({ agent_id: 'researcher', prompt: `/tool exec {"command":"echo from-${ctx}"}` })}`, ctx);
    const pendingUnder = async (ctx: string) => (await s!.rpc<{ approvals: any[] }>('approvals.list', {})).approvals.filter((a) => a.parentChain?.[0] === `agent:main:a2a:${ctx}`);
    // Before: `working` all along, and a blocking send did not return until the delegate's item was decided.
    const blocked = asTask(await c.sendMessage(ask('ctx-deleg')));
    expect(blocked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(textOf(blocked.status?.message)).toContain('exec');
    expect((await c.getTask({ tenant: '', id: blocked.id })).status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const [item] = await until(() => pendingUnder('ctx-deleg').then((x) => (x.length ? x : null)));
    await s.rpc('approvals.resolve', { approvalId: item.approvalId, decision: 'allow_once' });
    await until(async () => (await c.getTask({ tenant: '', id: blocked.id })).status?.state === TaskState.TASK_STATE_COMPLETED);
    expect(textOf((await c.getTask({ tenant: '', id: blocked.id })).status?.message)).toContain('from-ctx-deleg');

    const states: Array<TaskState | undefined> = [];
    for await (const e of c.sendMessageStream(ask('ctx-deleg-stream'))) {
      states.push(stateOfResp(e));
      if (stateOfResp(e) === TaskState.TASK_STATE_INPUT_REQUIRED && states.filter((x) => x === TaskState.TASK_STATE_INPUT_REQUIRED).length === 1) {
        const [waiting] = await until(() => pendingUnder('ctx-deleg-stream').then((x) => (x.length ? x : null)));
        await s.rpc('approvals.resolve', { approvalId: waiting.approvalId, decision: 'allow_once' });
      }
    }
    const inputAt = states.indexOf(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(inputAt).toBeGreaterThan(0);
    expect(states.slice(inputAt + 1)).toContain(TaskState.TASK_STATE_WORKING);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('an MCP elicitation is input-required with what is asked; accept with content reaches the server and the task completes with no new message', async () => {
    s = await startTestServer({ config: { agents: [{ id: 'main', tools: { 'mcp__files__*': 'auto' } }], mcp: { servers: { files: { command: process.execPath, args: [STDIO_SERVER] } } } } });
    await s.rt.mcp.ready();
    const c = await client(s);
    const askedIn = (r: StreamResponse | Task | undefined) => {
      const st = r && 'payload' in r ? (r.payload?.$case === 'statusUpdate' ? r.payload.value.status : r.payload?.$case === 'task' ? r.payload.value.status : undefined) : (r as Task | undefined)?.status;
      const parts = st?.message?.parts ?? [];
      return { text: parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])).join('\n'), data: parts.flatMap((p) => (p.content?.$case === 'data' ? [p.content.value] : [])) };
    };
    const schema = { type: 'object', properties: { sure: { type: 'boolean', title: 'Sure' } }, required: ['sure'] };

    // Streaming: input-required says the server's question (and carries its form), accept with content goes on to completed.
    const events: StreamResponse[] = [];
    let answered = false;
    for await (const e of c.sendMessageStream(message('/tool mcp__files__confirm {}', 'ctx-elicit'))) {
      events.push(e);
      if (!answered && stateOfResp(e) === TaskState.TASK_STATE_INPUT_REQUIRED) {
        answered = true;
        expect(askedIn(e).text).toContain('Really do it?');
        expect(askedIn(e).data).toEqual([expect.objectContaining({ kind: 'elicitation', server: 'files', message: 'Really do it?', mode: 'form', requestedSchema: schema })]);
        const { approvals } = await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: 'agent:main:a2a:ctx-elicit' });
        expect(approvals).toEqual([expect.objectContaining({ kind: 'elicitation', message: 'Really do it?' })]);
        await s.rpc('approvals.resolve', { approvalId: approvals[0].approvalId, decision: 'accept', content: { sure: true } });
      }
    }
    const states = events.map(stateOfResp).filter((x) => x !== undefined);
    const inputAt = states.indexOf(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(inputAt).toBeGreaterThan(0);
    expect(states.slice(inputAt + 1)).toContain(TaskState.TASK_STATE_WORKING);
    expect(states[states.length - 1]).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(askedIn(events[events.length - 1]).text).toContain('answer {\\"action\\":\\"accept\\",\\"content\\":{\\"sure\\":true}}');

    // Blocking send: returns at input-required with the question; tasks/get says the same; answered, it completes by itself.
    const blocked = asTask(await c.sendMessage(message('/tool mcp__files__confirm {}', 'ctx-elicit-2')));
    expect(blocked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(askedIn(blocked).text).toContain('Really do it?');
    const got = await c.getTask({ tenant: '', id: blocked.id });
    expect(askedIn(got).text).toContain('Really do it?');
    expect(askedIn(got).data).toEqual([expect.objectContaining({ kind: 'elicitation', message: 'Really do it?', requestedSchema: schema })]);
    // An older (v0.3) client sees the same: a text part and the form as a data part.
    const legacy = await (await postA2A(s, { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: blocked.id } })).json();
    expect(legacy.result.status).toMatchObject({ state: 'input-required', message: { parts: [{ kind: 'text', text: expect.stringContaining('files asks: Really do it?') }, { kind: 'data', data: expect.objectContaining({ kind: 'elicitation', requestedSchema: schema }) }] } });
    const { approvals } = await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: 'agent:main:a2a:ctx-elicit-2' });
    await s.rpc('approvals.resolve', { approvalId: approvals[0].approvalId, decision: 'accept', content: { sure: false } });
    const done = await until(async () => {
      const t = await c.getTask({ tenant: '', id: blocked.id });
      return t.status?.state === TaskState.TASK_STATE_COMPLETED && t;
    });
    expect(askedIn(done).text).toContain('answer {\\"action\\":\\"accept\\",\\"content\\":{\\"sure\\":false}}');
    expect(done.history).toHaveLength(1);
    expect(await s.rt.store.getApproval(approvals[0].approvalId)).toMatchObject({ status: 'allowed', decision: 'accept' });
  });

  it('a run that fails is a failed task, with the error as its status message', async () => {
    s = await startTestServer();
    const c = await client(s);
    const task = asTask(await c.sendMessage(message('/fail the model broke', 'ctx-fail')));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(textOf(task.status?.message)).toContain('the model broke');
    const streamed: StreamResponse[] = [];
    for await (const e of c.sendMessageStream(message('/fail again', 'ctx-fail'))) streamed.push(e);
    expect(stateOfResp(streamed[streamed.length - 1]!)).toBe(TaskState.TASK_STATE_FAILED);
  });

  it('cancel → agent.cancel: the task ends canceled', async () => {
    s = await startTestServer();
    const c = await client(s);
    const req = message('/sleep 30000', 'ctx-cancel');
    const task = asTask(await c.sendMessage({ ...req, configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true } }));
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(task.status?.state);
    const canceled = await c.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(await s.rpc('agent.wait', { runId: task.id })).toMatchObject({ status: 'error', error: 'cancelled' });
    await expect(c.cancelTask({ tenant: '', id: task.id, metadata: undefined })).rejects.toThrow();
  });

  it('resubscribing after a dropped stream replays from the event log: no event is lost', async () => {
    s = await startTestServer();
    const c = await client(s);
    const ac = new AbortController();
    const seen: StreamResponse[] = [];
    let taskId = '';
    try {
      for await (const e of c.sendMessageStream(message('/tool exec {"command":"echo resumed"}', 'ctx-resub'), { signal: ac.signal })) {
        seen.push(e);
        if (e.payload?.$case === 'task') taskId = e.payload.value.id;
        if (stateOfResp(e) === TaskState.TASK_STATE_INPUT_REQUIRED) ac.abort(); // the connection drops here
      }
    } catch {
      /* the aborted stream */
    }
    expect(taskId).not.toBe('');
    // While no one listens, the approval is resolved and the run finishes.
    const { approvals } = await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: 'agent:main:a2a:ctx-resub' });
    await s.rpc('approvals.resolve', { approvalId: approvals[0].approvalId, decision: 'allow_once' });
    await s.rpc('agent.wait', { runId: taskId });
    const replay: StreamResponse[] = [];
    for await (const e of c.resubscribeTask({ tenant: '', id: taskId })) replay.push(e);
    const ids = (rs: StreamResponse[]) => rs.flatMap((r) => (r.payload?.$case === 'statusUpdate' || r.payload?.$case === 'artifactUpdate' ? [r.payload.value.metadata?.eventId] : []));
    for (const id of ids(seen)) expect(ids(replay)).toContain(id);
    const states = replay.map(stateOfResp).filter((x) => x !== undefined);
    expect(states).toEqual(expect.arrayContaining([TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_WORKING]));
    expect(states[states.length - 1]).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("a deleted session's tasks are gone: get, resubscribe, cancel and a message naming one are TaskNotFound, never its archive key", async () => {
    s = await startTestServer();
    const c = await client(s);
    const err = (p: Promise<unknown>) => p.then(() => null, (e: Error) => e);
    for (const deleteTranscript of [true, false]) {
      const ctx = `ctx-del-${deleteTranscript}`;
      const task = asTask(await c.sendMessage(message('hi', ctx)));
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      await s.rpc('sessions.delete', { sessionKey: `agent:main:a2a:${ctx}`, deleteTranscript });
      // Before: the task answered with contextId "ctx-del-true#deleted-<ms>" (the key sessions.delete moves kept rows
      // to), and a resubscribe sent the COMPLETED snapshot and then stayed open for good (its events were deleted).
      const got = await err(c.getTask({ tenant: '', id: task.id }));
      expect(got?.constructor.name, String(got)).toBe('JsonRpcTaskNotFoundError');
      const resub = await Promise.race([
        err((async () => {
          for await (const e of c.resubscribeTask({ tenant: '', id: task.id })) void e;
        })()),
        new Promise<string>((r) => setTimeout(() => r('the stream is still open after 5 s'), 5000)),
      ]);
      expect((resub as Error | null)?.constructor.name, String(resub)).toBe('JsonRpcTaskNotFoundError');
      expect((await err(c.cancelTask({ tenant: '', id: task.id, metadata: undefined })))?.constructor.name).toBe('JsonRpcTaskNotFoundError');
      expect((await err(c.sendMessage(message('again', '', task.id))))?.constructor.name).toBe('JsonRpcTaskNotFoundError');
      const raw = await (await postA2A(s, { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: task.id } })).text();
      expect(raw).not.toContain('#deleted-');
    }
  });

  it('resubscribing to an ended task whose end is not in the event log ends with its snapshot, it does not wait for good', async () => {
    s = await startTestServer();
    const c = await client(s);
    const task = asTask(await c.sendMessage(message('hello', 'ctx-noend')));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    // As a run a migration closed (a second running run of its session: interrupted, with no event): no end logged.
    await s.rt.store.db.deleteFrom('events').where('run_id', '=', task.id).where('stream', '=', 'lifecycle').execute();
    const seen: StreamResponse[] = [];
    const ended = await Promise.race([
      (async () => {
        for await (const e of c.resubscribeTask({ tenant: '', id: task.id })) seen.push(e);
        return 'ended';
      })(),
      new Promise<string>((r) => setTimeout(() => r('still open after 5 s'), 5000)),
    ]);
    expect(ended).toBe('ended');
    expect(seen.map(stateOfResp)).toEqual([TaskState.TASK_STATE_COMPLETED]);
  });

  it('push notification configs go out through the webhook outbox, with the SSRF rules', async () => {
    const received: any[] = [];
    const hook = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ body: JSON.parse(body), raw: body, ts: req.headers['x-crosstalk-timestamp'], signature: req.headers['x-crosstalk-signature'], token: req.headers['x-a2a-notification-token'], type: req.headers['content-type'] });
        res.end('ok');
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    cleanup.push(() => new Promise<void>((r) => hook.close(() => r())));
    const hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
    // Private addresses are refused by default, as for every webhook.
    s = await startTestServer();
    let c = await client(s);
    const cfg = (taskId: string) => ({ tenant: '', id: '', taskId, url: hookUrl, token: 'push-secret', authentication: undefined });
    const first = asTask(await c.sendMessage({ ...message('/sleep 200', 'ctx-push'), configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true } }));
    await expect(c.createTaskPushNotificationConfig(cfg(first.id))).rejects.toThrow(/refused/);
    // A send whose push URL is refused starts nothing (before: refused to the client, and the turn ran anyway).
    const refusedSend = c.sendMessage({ ...message('/reply ran anyway', 'ctx-push-refused'), configuration: { acceptedOutputModes: [], taskPushNotificationConfig: cfg(''), returnImmediately: true } });
    await expect(refusedSend).rejects.toThrow(/refused/);
    expect(await s.rt.store.getSession('agent:main:a2a:ctx-push-refused')).toBeFalsy();
    await s.close();
    s = await startTestServer({ config: { webhooks: { allowPrivateNetwork: true, retryBaseMs: 50 } } });
    c = await client(s);
    const task = asTask(await c.sendMessage({ ...message('/sleep 200\n/reply pushed', 'ctx-push'), configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true } }));
    const stored = await c.createTaskPushNotificationConfig(cfg(task.id));
    expect(stored.id).not.toBe('');
    expect((await c.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 10, pageToken: '' })).configs).toHaveLength(1);
    const done = await until(() => received.find((r) => r.body.statusUpdate?.status?.state === 'TASK_STATE_COMPLETED'));
    expect(done.body.statusUpdate.taskId).toBe(task.id);
    // Signed like every crosstalk webhook (CONTRACT §5): the HMAC (keyed by the config's token) of "<timestamp>.<body>".
    expect(Math.abs(Number(done.ts) - Date.now() / 1000)).toBeLessThanOrEqual(300);
    expect(done.signature).toBe(`sha256=${crypto.createHmac('sha256', 'push-secret').update(`${done.ts}.${done.raw}`).digest('hex')}`);
    expect(done.token).toBe('push-secret');
    expect(done.type).toBe('application/a2a+json');
  });

  it('push configs survive a restart: a task that waited on an approval still reports its completion', async () => {
    const received: any[] = [];
    const hook = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push(JSON.parse(body));
        res.end('ok');
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    cleanup.push(() => new Promise<void>((r) => hook.close(() => r())));
    const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
    const dataDir = tmpDataDir();
    const config = { webhooks: { allowPrivateNetwork: true, retryBaseMs: 50 } };
    s = await startTestServer({ dataDir, config });
    let c = await client(s);
    const sessionKey = 'agent:main:a2a:ctx-push-restart';
    const task = asTask(
      await c.sendMessage({
        ...message('/tool exec {"command":"echo after-restart"}', 'ctx-push-restart'),
        configuration: { acceptedOutputModes: [], taskPushNotificationConfig: { tenant: '', id: 'p1', taskId: '', url, token: 't', authentication: undefined }, returnImmediately: true },
      }),
    );
    await until(async () => (await s!.rpc<{ approvals: any[] }>('approvals.list', { sessionKey })).approvals.length === 1);
    await until(() => received.some((r) => r.statusUpdate?.status?.state === 'TASK_STATE_INPUT_REQUIRED'));
    await s.crash();
    s = await startTestServer({ dataDir, config });
    c = await client(s);
    expect((await c.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'p1' })).url).toBe(url);
    const { approvals } = await s.rpc<{ approvals: any[] }>('approvals.list', { sessionKey });
    await s.rpc('approvals.resolve', { approvalId: approvals[0].approvalId, decision: 'allow_once' });
    const done = await until(() => received.find((r) => r.statusUpdate?.taskId === task.id && r.statusUpdate.status.state === 'TASK_STATE_COMPLETED'));
    expect(JSON.stringify(done.statusUpdate.status.message)).toContain('after-restart');
  });
});
