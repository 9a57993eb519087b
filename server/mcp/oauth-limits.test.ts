// MCP OAuth cannot stall, exhaust or turn the gateway on the inside network (README "Security"): against real HTTP
// servers on 127.0.0.1, a /token answering half a gigabyte or a byte a second, and an authorization server on an
// internal address named by a server the operator took for a remote one.
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { OAUTH_ERROR_BODY_CHARS, OAUTH_MAX_BYTES, oauthNetwork, oauthRoute } from './oauth-fetch';
import { type HostileOAuthServer, startHostileOAuthServer } from './testing/hostile-oauth-server';

const classify = { ...oauthNetwork };
let s: TestServer | undefined;
let remote: HostileOAuthServer | undefined;
afterEach(async () => {
  Object.assign(oauthNetwork, classify);
  await s?.close();
  await remote?.close();
  s = remote = undefined;
});

const KEY = 'agent:main:main';

async function start(o: Parameters<typeof startHostileOAuthServer>[0], webhooks?: Record<string, unknown>) {
  remote = await startHostileOAuthServer(o);
  s = await startTestServer({ config: { agents: [{ id: 'main', tools: { 'mcp__remote__*': 'auto' } }], mcp: { servers: { remote: { url: remote.url } } }, ...(webhooks ? { webhooks } : {}) } });
  return s;
}

const status = async (srv: TestServer) => (await srv.rpc<any>('status')).mcp[0] as { state: string; error?: string };

/** A person's browser: opens the item's URL, and the authorization server sends it to the gateway's callback. */
async function authorize(srv: TestServer) {
  const item = await until(async () => (await srv.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: KEY })).approvals.find((a) => a.kind === 'authorization'), 15_000);
  const res = await fetch(item.url, { redirect: 'manual' });
  const back = new URL(res.headers.get('location')!);
  return fetch(`${srv.url}${back.pathname}${back.search}`);
}

describe('where MCP OAuth requests may go', () => {
  const publicServer = 'https://93.184.215.14/mcp';
  it('an authorization server on a private, loopback or link-local address is refused when the MCP server is public', async () => {
    for (const target of ['http://169.254.169.254/latest/meta-data', 'http://127.0.0.1:8080/token', 'http://10.1.2.3/register', 'http://[::1]:9000/.well-known/oauth-authorization-server']) {
      const route = await oauthRoute(target, publicServer, false);
      expect(route, target).toEqual({ refused: expect.stringMatching(/^MCP OAuth request to \S+ refused: url points at a private or loopback address \(.+\) \(the MCP server https:\/\/93\.184\.215\.14 is not on a private network; webhooks\.allowPrivateNetwork allows it\)$/) });
    }
    expect(await oauthRoute('ftp://1.1.1.1/x', publicServer, false)).toEqual({ refused: expect.stringContaining('only http(s)') });
  });
  it('is allowed where the operator chose so: the MCP server on a private address, allowPrivateNetwork, or the server\'s own origin', async () => {
    expect(await oauthRoute('http://10.0.0.5/token', 'http://127.0.0.1:7000/mcp', false)).toEqual({ guard: false });
    expect(await oauthRoute('http://169.254.169.254/token', 'http://localhost:7000/mcp', false)).toEqual({ guard: false });
    expect(await oauthRoute('http://10.0.0.5/token', 'http://192.168.1.4/mcp', false)).toEqual({ guard: false });
    expect(await oauthRoute('http://10.0.0.5/token', publicServer, true)).toEqual({ guard: false });
    expect(await oauthRoute('https://93.184.215.14/.well-known/oauth-protected-resource/mcp', publicServer, false)).toEqual({ guard: false });
    // A public authorization server of a public MCP server: through the guard, which checks the address it connects to.
    expect(await oauthRoute('https://1.1.1.1/token', publicServer, false)).toEqual({ guard: true });
  });
});

describe('MCP OAuth against a hostile authorization server', () => {
  it('of a server taken for a remote one, an authorization server on an internal address gets no request; the status says why', async () => {
    // Every test server is on 127.0.0.1: this one is classified as the remote server a real one would be.
    oauthNetwork.serverIsPrivate = async () => false;
    const srv = await start({ token: 'ok', separateAs: true });
    const st = await until(async () => ((await status(srv)).error ? status(srv) : undefined), 15_000);
    expect(st).toMatchObject({ state: 'failed', error: expect.stringContaining(`MCP OAuth request to ${remote!.asOrigin} refused: url points at a private or loopback address (127.0.0.1)`) });
    // Before: its well-knowns were read and its /register posted to.
    expect(remote!.asHits).toEqual([]);
  });

  it('an internal page an authorization server answers is not echoed into the status (cut short)', async () => {
    const secret = `${'<p>internal</p>'.repeat(40)}SECRET-TAIL`;
    const srv = await start({ token: 'ok', separateAs: true, registerPage: secret });
    const st = await until(async () => ((await status(srv)).error ? status(srv) : undefined), 15_000);
    // The MCP server is on 127.0.0.1 itself (the operator chose a local server): its authorization server is asked.
    expect(remote!.asHits).toContain('POST /register');
    expect(st.error).toContain('HTTP 500');
    expect(st.error).toContain(`(${secret.length} characters)`);
    // Before: the whole raw body, in status.mcp[].error.
    expect(st.error).not.toContain('SECRET-TAIL');
    expect(st.error!.length).toBeLessThan(OAUTH_ERROR_BODY_CHARS + 400);
  });

  it('a /token answering half a gigabyte: the exchange fails at the cap with a clear error, memory stays bounded, the gateway answers', async () => {
    const srv = await start({ token: 'huge' });
    const rss = process.memoryUsage().rss;
    const page = await authorize(srv);
    expect(page.status).toBe(502);
    expect(await page.text()).toContain(`the token exchange failed: the authorization server sent a message over ${OAUTH_MAX_BYTES} bytes; it was not read`);
    // Before: the SDK read it all with the global fetch (the probe's 4 GB took the gateway to 8.4 GB and a minute).
    expect(remote!.tokenBytes()).toBeLessThan(64 * 1024 * 1024);
    expect(process.memoryUsage().rss - rss).toBeLessThan(256 * 1024 * 1024);
    expect((await status(srv)).state).toBe('failed');
    expect((await srv.rpc<any>('status')).mcp).toHaveLength(1);
  }, 60_000);

  it('a /token that trickles a byte a second: the exchange ends at the deadline with a clear error', async () => {
    oauthNetwork.timeoutMs = 1500;
    const srv = await start({ token: 'trickle' });
    const t = Date.now();
    const page = await authorize(srv);
    expect(page.status).toBe(502);
    expect(await page.text()).toContain('the token exchange failed: the authorization server did not answer within 1500 ms');
    // Before: no deadline; the callback (and the exchange) waited as long as the server kept writing.
    expect(Date.now() - t).toBeLessThan(10_000);
  });
});
