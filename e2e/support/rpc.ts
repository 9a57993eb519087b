// JSON-RPC calls to the gateway from tests (the API request context goes straight to the server).
import { expect, type APIRequestContext } from '@playwright/test';

export async function rpc<T = any>(request: APIRequestContext, token: string, method: string, params: object): Promise<T> {
  return rpcAt<T>(request, '', token, method, params);
}

/** `rpc` against a server of the test's own (`origin` is its `http://127.0.0.1:port`). */
export async function rpcAt<T = any>(request: APIRequestContext, origin: string, token: string, method: string, params: object): Promise<T> {
  const res = await request.post(`${origin}/api/gateway`, {
    headers: { authorization: `Bearer ${token}` },
    data: { jsonrpc: '2.0', id: 1, method, params },
  });
  const body = await res.json();
  expect(body.error, JSON.stringify(body.error)).toBeUndefined();
  return body.result as T;
}
