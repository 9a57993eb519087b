// POST /api/gateway on bare node:http (no Request/Response objects): the hot path of `npm start`, the worker and tests.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isAuthorized } from '../auth';
import type { FullRuntime } from '../runtime-types';
import { handleJsonRpc, rpcError, tooLargeResponse, unauthorizedResponse } from '../gateway/jsonrpc';
import { MAX_BODY_BYTES } from './handlers';

function send(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Node's IncomingHttpHeaders, seen through the Headers interface that isAuthorized reads. */
function headerView(req: IncomingMessage): Headers {
  return { get: (name: string) => {
    const v = req.headers[name.toLowerCase()];
    return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
  } } as Headers;
}

export function handleGatewayNode(rt: FullRuntime, req: IncomingMessage, res: ServerResponse): void {
  if (!isAuthorized(headerView(req), rt.token)) {
    req.resume();
    return send(res, 401, unauthorizedResponse());
  }
  const tooLarge = () => send(res, 413, tooLargeResponse());
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) {
    req.resume();
    return tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  req.on('data', (c: Buffer) => {
    if (over) return;
    size += c.length;
    if (size > MAX_BODY_BYTES) {
      over = true;
      tooLarge();
      return;
    }
    chunks.push(c);
  });
  req.on('end', () => {
    if (over) return;
    handleJsonRpc(rt.gateway, Buffer.concat(chunks).toString('utf8'), rt.log).then(
      (out) => (out === null ? (res.writeHead(204), res.end()) : send(res, 200, out)),
      (e) => {
        rt.log.error({ err: e }, 'gateway request failed');
        send(res, 500, rpcError(null, -32603, 'internal error', { code: 'internal' }));
      },
    );
  });
  req.on('error', () => res.destroy());
}
