// The A2A server's wire (CONTRACT §8): the agent card and the token, the JSON-RPC edges, the v0.3 and v1.0 method
// names (the SDK's own legacy client too), and every method's params checked first. Tasks: a2a-server.test.ts.
import crypto from 'node:crypto';
import { type StreamResponse, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer } from '../testing/harness';
import { asTask, authFetch, client, message, postA2A, stateOfResp } from './testing/a2a-client';

let s: TestServer | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

describe('A2A wire', () => {
  it('serves the agent card without a token, advertising bearer auth and both protocol versions; calls need the token', async () => {
    s = await startTestServer();
    const res = await fetch(`${s.url}/a2a/main/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } });
    expect(res.status).toBe(200);
    const card = await res.json();
    expect(card.name).toBe('Main');
    expect(card.supportedInterfaces).toEqual([
      expect.objectContaining({ url: `${s.url}/a2a/main`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }),
      expect.objectContaining({ url: `${s.url}/a2a/main`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' }),
    ]);
    expect(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme).toBe('Bearer');
    // Without A2A-Version (an older client), the v0.3 form, with the v1.0 interfaces embedded, as the SDK's own server answers.
    const legacy = await (await fetch(`${s.url}/a2a/main/.well-known/agent-card.json`)).json();
    expect(legacy).toMatchObject({ url: `${s.url}/a2a/main`, preferredTransport: 'JSONRPC', protocolVersion: '0.3', securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } });
    expect(legacy.supportedInterfaces).toEqual(card.supportedInterfaces);
    const none = await fetch(`${s.url}/a2a/nobody/.well-known/agent-card.json`);
    expect(none.status).toBe(404);
    // The body every A2A route answers an unknown agent with (before: {error: 'unknown agent'}, a string).
    expect(await none.json()).toEqual({ error: { code: 'unknown_agent', message: 'unknown agent nobody' } });
    const c = await client(s);
    expect((await c.getAgentCard()).capabilities?.streaming).toBe(true);
    const unauth = await fetch(`${s.url}/a2a/main`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: {} }) });
    expect(unauth.status).toBe(401);
    expect(await unauth.json()).toEqual({ error: { code: 'unauthorized', message: expect.stringContaining('Bearer') } });
    // The SDK's client reports the HTTP status: it read the gateway's JSON-RPC -32001 as A2A's TaskNotFound before.
    const wrongToken = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl: (input, init) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), authorization: 'Bearer wrong' } }) })],
      }),
    );
    const refused = await (await wrongToken.createFromUrl(`${s.url}/a2a/main/`)).sendMessage(message('hi', 'ctx-auth')).then(
      () => null,
      (e: Error) => e,
    );
    expect(refused?.constructor.name).toBe('Error');
    expect(refused?.message).toMatch(/401/);
    const nobody = await fetch(`${s.url}/a2a/nobody`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` }, body: '{}' });
    expect([nobody.status, (await nobody.json()).error.code]).toEqual([404, 'unknown_agent']);
  });

  it('JSON-RPC edges: an unknown method is -32601 with or without params (v0.3 and v1.0); a notification gets no answer (204)', async () => {
    const srv = (s = await startTestServer());
    const post = (body: unknown, v1 = false) => postA2A(srv, body, v1);
    for (const v1 of [false, true])
      for (const extra of [{}, { params: {} }]) {
        const res = await post({ jsonrpc: '2.0', id: 7, method: 'nope', ...extra }, v1);
        expect((await res.json()).error.code).toBe(-32601);
      }
    // A known method without params is still refused for its params.
    expect((await (await post({ jsonrpc: '2.0', id: 8, method: 'tasks/get' })).json()).error.code).toBe(-32602);
    for (const body of [{ jsonrpc: '2.0', method: 'tasks/get', params: { id: 'x' } }, { jsonrpc: '2.0', method: 'nope' }]) {
      const res = await post(body);
      expect(res.status).toBe(204);
      expect(await res.text()).toBe('');
    }
  });

  it('speaks the v0.3 JSON-RPC names (message/send, tasks/get) for older clients', async () => {
    s = await startTestServer();
    const call = async (method: string, params: unknown) => (await postA2A(s!, { jsonrpc: '2.0', id: 1, method, params })).json();
    const sent = await call('message/send', { message: { kind: 'message', role: 'user', messageId: 'm-1', contextId: 'legacy', parts: [{ kind: 'text', text: 'old client' }] } });
    expect(sent.result).toMatchObject({ kind: 'task', contextId: 'legacy', status: { state: 'completed' } });
    expect(sent.result.artifacts[0].parts[0]).toMatchObject({ kind: 'text', text: 'echo: old client' });
    const got = await call('tasks/get', { id: sent.result.id });
    expect(got.result.status.state).toBe('completed');
    const missing = await call('tasks/get', { id: 'run_nope' });
    expect(missing.error.code).toBe(-32001);
  });

  it("the SDK's own v0.3 client (legacy compat) sends, streams, gets and cancels", async () => {
    s = await startTestServer();
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch, legacyCompat: { enabled: true } })] }),
    );
    const v1 = await (await client(s)).getAgentCard();
    // Only the v0.3 interface: the client has to speak the v0.3 names.
    const c = await factory.createFromAgentCard({ ...v1, supportedInterfaces: v1.supportedInterfaces.filter((i) => i.protocolVersion === '0.3') });
    expect(c.protocolVersion).toMatch(/^0\.3/);
    const task = asTask(await c.sendMessage(message('legacy hello', 'ctx-legacy')));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const events: StreamResponse[] = [];
    for await (const e of c.sendMessageStream(message('legacy stream', 'ctx-legacy'))) events.push(e);
    expect(stateOfResp(events[events.length - 1]!)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect((await c.getTask({ tenant: '', id: task.id })).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const slow = asTask(await c.sendMessage({ ...message('/sleep 30000', 'ctx-legacy-2'), configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true } }));
    expect((await c.cancelTask({ tenant: '', id: slow.id, metadata: undefined })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  });

  it('speaks the v1.0 JSON-RPC names with A2A-Version: 1.0 (the README curl)', async () => {
    s = await startTestServer();
    const res = await fetch(`${s.url}/a2a/main`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}`, 'A2A-Version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'm-2', role: 'ROLE_USER', contextId: 'v1', parts: [{ text: 'new client' }] } } }),
    });
    const body = await res.json();
    expect(body.result.task).toMatchObject({ contextId: 'v1', status: { state: 'TASK_STATE_COMPLETED' } });
    expect(body.result.task.artifacts[0].parts[0].text).toBe('echo: new client');
  });

  it('validates every method\'s params first (-32602 naming the field, never -32603), in both dialects, and applies the gateway\'s input rules', async () => {
    s = await startTestServer();
    const call = async (method: string, params: unknown, v1 = false) =>
      (await (await postA2A(s!, { jsonrpc: '2.0', id: 9, method, params }, v1)).json()) as { id: unknown; result?: any; error?: { code: number; message: string; data?: { code: string; issues: Array<{ path: string }> } } };
    const legacy = ['message/send', 'message/stream', 'tasks/get', 'tasks/cancel', 'tasks/resubscribe', 'tasks/pushNotificationConfig/set', 'tasks/pushNotificationConfig/get', 'tasks/pushNotificationConfig/list', 'tasks/pushNotificationConfig/delete'];
    const v1 = ['SendMessage', 'SendStreamingMessage', 'GetTask', 'CancelTask', 'SubscribeToTask', 'CreateTaskPushNotificationConfig', 'GetTaskPushNotificationConfig', 'DeleteTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs'];
    for (const [methods, isV1] of [[legacy, false], [v1, true]] as const) {
      for (const m of methods) {
        for (const params of [{ id: 5 }, 'x', [1], null]) {
          const r = await call(m, params, isV1);
          expect({ m, params, error: r.error }).toMatchObject({ m, error: { code: -32602, data: { code: 'invalid_request' } } });
          expect(r.id).toBe(9);
        }
      }
    }
    // The case of the review: a push config for a task whose params are not an object.
    const set = await call('tasks/pushNotificationConfig/set', { id: 5 });
    expect(set.error?.data?.issues.map((i) => i.path)).toEqual(expect.arrayContaining(['params.taskId', 'params.pushNotificationConfig']));

    const msg = (text: string, contextId: string) => ({ message: { kind: 'message', messageId: crypto.randomUUID(), role: 'user', contextId, parts: [{ kind: 'text', text }] }, configuration: { blocking: true } });
    const v1msg = (text: string, contextId: string) => ({ message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', contextId, parts: [{ text }] } });
    for (const [params, field] of [
      [msg('hi', 'c'.repeat(513)), 'params.message.contextId'],
      [msg('hi', 'ctx with space'), 'params.message.contextId'],
      [msg('hi', 'ctx/../x'), 'params.message.contextId'],
      [msg('a\u0000b', 'ctx-nul'), 'params.message.parts.0.text'],
      [msg('x'.repeat(256 * 1024 + 1), 'ctx-big'), 'params.message.parts'],
    ] as const) {
      for (const [m, p, isV1] of [['message/send', params, false], ['SendMessage', v1msg(params.message.parts[0]!.text, params.message.contextId), true]] as const) {
        const r = await call(m, p, isV1);
        expect(r.error).toMatchObject({ code: -32602, data: { code: 'invalid_request' } });
        expect(r.error!.data!.issues.map((i) => i.path)).toContain(field);
      }
    }
    // None of them started anything; the limits themselves are accepted.
    expect((await s.rt.store.db.selectFrom('runs').select('id').execute()).length).toBe(0);
    const ok = await call('message/send', msg('x'.repeat(256 * 1024 - 10), `C${'c'.repeat(511)}`));
    expect(ok.result?.status?.state).toBe('completed');
    expect(ok.result?.contextId).toBe(`C${'c'.repeat(511)}`); // as the client spelled it; its session key is lowercased
    // The session that contextId made (527 characters) is one JSON-RPC reads and writes like any other.
    const key = `agent:main:a2a:${'c'.repeat(512)}`;
    expect((await s.rpc<{ messages: unknown[] }>('chat.history', { sessionKey: key })).messages).toHaveLength(2);
    expect((await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply again' })).runId).toBeTruthy();
    const tooLong = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'chat.history', params: { sessionKey: `agent:main:${'c'.repeat(1024)}` } });
    expect(tooLong.body.error).toMatchObject({ code: -32602, data: { code: 'invalid_request', issues: [{ path: 'sessionKey' }] } });
  });
});
