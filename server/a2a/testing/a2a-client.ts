// The A2A tests' client side: the official @a2a-js/sdk client with the gateway's token, a message, and a raw JSON-RPC POST.
import crypto from 'node:crypto';
import { Role, type StreamResponse, type Task } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { expect } from 'vitest';
import { TEST_TOKEN, type TestServer } from '../../testing/harness';

export const authFetch: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set('authorization', `Bearer ${TEST_TOKEN}`);
  return fetch(input, { ...init, headers });
};

export async function client(srv: TestServer, agentId = 'main'): Promise<Client> {
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })] }));
  // As the SDK's CLI sample does: the agent's URL with a trailing slash, the card path resolved against it.
  return factory.createFromUrl(`${srv.url}/a2a/${agentId}/`);
}

export function message(text: string, contextId = '', taskId = '') {
  return {
    tenant: '',
    message: { messageId: crypto.randomUUID(), contextId, taskId, role: Role.ROLE_USER, parts: [{ content: { $case: 'text' as const, value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }], metadata: undefined, extensions: [], referenceTaskIds: [] },
    configuration: undefined,
    metadata: undefined,
  };
}

export const asTask = (r: unknown) => {
  expect(r).toHaveProperty('status');
  return r as Task;
};

export const stateOfResp = (r: StreamResponse) => (r.payload?.$case === 'statusUpdate' ? r.payload.value.status?.state : r.payload?.$case === 'task' ? r.payload.value.status?.state : undefined);

/** One JSON-RPC body POSTed to `/a2a/main` with the token; `v1`: with `A2A-Version: 1.0` (else the v0.3 names). */
export const postA2A = (srv: TestServer, body: unknown, v1 = false) =>
  fetch(`${srv.url}/a2a/main`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}`, ...(v1 ? { 'A2A-Version': '1.0' } : {}) }, body: JSON.stringify(body) });
