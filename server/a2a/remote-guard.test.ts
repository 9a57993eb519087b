// What a remote A2A agent cannot make us do (CONTRACT §5 "A2A and remote agents"): wedge turns with a slow card, move our
// token to another origin, redirect us, reach private addresses unasked, flood us with a reply, or learn our session keys.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { type RemoteAgent, startRemoteAgent } from './testing/remote-agent';

let s: TestServer | undefined;
let remote: RemoteAgent | undefined;
const servers: http.Server[] = [];
afterEach(async () => {
  await s?.close();
  await remote?.close();
  for (const srv of servers.splice(0)) {
    srv.closeAllConnections();
    await new Promise((r) => srv.close(r));
  }
  s = remote = undefined;
});

/** A plain HTTP server on loopback that records every request (method, path, authorization) it gets. */
async function rawServer(handle: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const seen: Array<{ path: string; authorization?: string }> = [];
  const closed: string[] = [];
  const srv = http.createServer((req, res) => {
    seen.push({ path: req.url ?? '', authorization: req.headers.authorization });
    res.on('close', () => closed.push(req.url ?? ''));
    handle(req, res);
  });
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, seen, closed };
}

/** A card server that sends its headers, then one space a tick, forever. */
const trickle = (_req: http.IncomingMessage, res: http.ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('{');
  const t = setInterval(() => res.write(' '), 50);
  res.on('close', () => clearInterval(t));
};

const cardOf = (rpcUrl: string) => ({
  name: 'x',
  description: 'x',
  supportedInterfaces: [{ url: rpcUrl, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
  version: '1.0.0',
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [],
  signatures: [],
});

const start = (a2a: Record<string, unknown>, allowPrivateNetwork = true) =>
  startTestServer({ config: { webhooks: { allowPrivateNetwork }, agents: [{ id: 'main' }, { id: 'remote', a2a }] } });

async function turn(srv: TestServer, sessionKey: string, message: string) {
  const { runId } = await srv.rpc<{ runId: string }>('agent', { sessionKey, message });
  return { runId, done: srv.rpc<{ status: string; response?: string; error?: string }>('agent.wait', { runId, timeoutMs: 20_000 }) };
}

describe('remote A2A agents under the trust rules', () => {
  it('a card that trickles bytes: agent.cancel stops its fetch, and a second run is not held up by the first one pending', async () => {
    const card = await rawServer(trickle);
    s = await start({ url: card.url, token: 'secret', timeoutMs: 1500 });
    const first = await turn(s, 'agent:remote:main', 'one');
    await until(() => card.seen.length === 1);
    // A second run fetches the card itself (with its own timeout) instead of waiting on the first run's pending fetch.
    const second = await turn(s, 'agent:remote:other', 'two');
    await until(() => card.seen.length === 2);
    await s.rpc('agent.cancel', { runId: first.runId });
    expect(await first.done).toMatchObject({ status: 'error', error: 'cancelled' });
    await until(() => card.closed.length >= 1); // the cancelled fetch let go of its connection
    const timedOut = await second.done;
    expect(timedOut.status).toBe('error');
    expect(timedOut.error).toMatch(/timed out after 1500 ms/);
    expect(card.seen.every((r) => r.authorization === undefined)).toBe(true); // the card is public: no token sent for it
  });

  it('a card whose interface points at another origin is refused, and our token never goes there', async () => {
    const elsewhere = await rawServer((_req, res) => res.writeHead(500).end());
    const card = await rawServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(cardOf(`${elsewhere.url}/rpc`))));
    s = await start({ url: card.url, token: 'secret' });
    const { done } = await turn(s, 'agent:remote:main', 'hello');
    const r = await done;
    expect(r.status).toBe('error');
    expect(r.error).toContain(`sends calls to ${elsewhere.url}, off its own origin ${card.url}: refused`);
    expect(elsewhere.seen).toEqual([]);
  });

  it('a redirecting card is refused and its target never asked', async () => {
    const target = await startRemoteAgent({ token: 'secret' });
    remote = target;
    const card = await rawServer((_req, res) => res.writeHead(302, { location: `${target.url}/.well-known/agent-card.json` }).end());
    s = await start({ url: card.url, token: 'secret' });
    const r = await (await turn(s, 'agent:remote:main', 'hello')).done;
    expect(r.status).toBe('error');
    expect(r.error).toContain('answered 302');
    expect(r.error).toContain('redirects are refused');
    expect(target.executor.started).toEqual([]);
  });

  it('a remote on a private address is refused unless webhooks.allowPrivateNetwork allows it', async () => {
    remote = await startRemoteAgent();
    s = await start({ url: remote.url }, false);
    const r = await (await turn(s, 'agent:remote:main', 'hello')).done;
    expect(r.status).toBe('error');
    expect(r.error).toContain('private or loopback address');
    expect(remote.executor.started).toEqual([]);
  });

  it("a reply over the cap fails the turn; one under it arrives whole", async () => {
    remote = await startRemoteAgent();
    s = await start({ url: remote.url, maxReplyBytes: 64 * 1024 });
    const big = await (await turn(s, 'agent:remote:main', 'huge 1000000')).done;
    expect(big.status).toBe('error');
    expect(big.error).toContain(`more than ${64 * 1024} bytes`);
    const small = await (await turn(s, 'agent:remote:main', 'huge 1000')).done;
    expect(small).toMatchObject({ status: 'ok', response: 'x'.repeat(1000) });
  });

  it('the contextId is opaque: not our session key, the same for one session, another for the next', async () => {
    remote = await startRemoteAgent();
    s = await start({ url: remote.url });
    for (const [key, text] of [['agent:remote:telegram:direct:4915123456789', 'a'], ['agent:remote:telegram:direct:4915123456789', 'b'], ['agent:remote:main', 'c']] as const) {
      expect((await (await turn(s, key, text)).done).status).toBe('ok');
    }
    const contexts = [...remote.executor.turns.entries()];
    expect(contexts).toHaveLength(2);
    const [[phone, n], [main]] = contexts as [[string, number], [string, number]];
    expect(n).toBe(2); // the follow-up continued the first context
    for (const c of [phone, main]) {
      expect(c).toMatch(/^ctx-[0-9a-f-]{36}$/);
      expect(c).not.toContain('4915123456789');
    }
    expect(phone).not.toBe(main);
  });
});
