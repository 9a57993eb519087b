// A hostile OAuth-protected MCP server on 127.0.0.1, for the OAuth limits tests: /mcp always answers 401, its
// protected-resource metadata names an authorization server (itself, or one on another port: another origin) whose
// /token answers a huge body, trickles, or works, and whose /register may answer an internal page.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type TokenMode = 'huge' | 'trickle' | 'ok';

/** What /token writes in `huge` mode, if the client reads it all: one JSON string of 512 MiB. */
export const HUGE_TOKEN_BYTES = 512 * 1024 * 1024;

export interface HostileOAuthServer {
  /** The MCP endpoint. */
  url: string;
  /** The authorization server's origin. */
  asOrigin: string;
  /** Requests the authorization server got: `METHOD /path`. */
  asHits: string[];
  /** Bytes of /token's answer written before the client stopped reading. */
  tokenBytes(): number;
  close(): Promise<void>;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

/** Listens on 127.0.0.1; each request's body is read before `handler` sees it. */
async function listen(handler: Handler): Promise<{ server: http.Server; origin: string }> {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => handler(req, res, body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const json = (res: http.ServerResponse, status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

/**
 * `token`: what /token does; `separateAs`: the authorization server on a port of its own (another origin);
 * `registerPage`: /register answers 500 with this text (an internal page) instead of registering.
 */
export async function startHostileOAuthServer(o: { token: TokenMode; separateAs?: boolean; registerPage?: string }): Promise<HostileOAuthServer> {
  const asHits: string[] = [];
  let tokenBytes = 0;
  let as = '';
  let mcp = '';
  const authorization: Handler = (req, res, body) => {
    const url = new URL(req.url ?? '/', as);
    asHits.push(`${req.method} ${url.pathname}`);
    if (url.pathname.startsWith('/.well-known/oauth-authorization-server') || url.pathname.startsWith('/.well-known/openid-configuration'))
      return json(res, 200, {
        issuer: as,
        authorization_endpoint: `${as}/authorize`,
        token_endpoint: `${as}/token`,
        registration_endpoint: `${as}/register`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none'],
      });
    if (url.pathname === '/register') {
      if (o.registerPage) return res.writeHead(500, { 'content-type': 'text/html' }).end(o.registerPage);
      return json(res, 201, { ...JSON.parse(body || '{}'), client_id: 'hostile-client', token_endpoint_auth_method: 'none' });
    }
    if (url.pathname === '/authorize') {
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', 'hostile-code');
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      return res.writeHead(302, { location: back.href }).end();
    }
    if (url.pathname === '/token') {
      if (o.token === 'ok') return json(res, 200, { access_token: 'at', token_type: 'bearer', expires_in: 3600 });
      res.writeHead(200, { 'content-type': 'application/json' });
      // Huge: a JSON string of HUGE_TOKEN_BYTES, written as fast as it is read. Trickling: a byte a second.
      const chunk = Buffer.alloc(64 * 1024, 'a');
      const write = (b: Buffer) => {
        tokenBytes += b.length;
        return res.write(b);
      };
      write(Buffer.from('{"access_token":"'));
      if (o.token === 'trickle') {
        const t = setInterval(() => write(Buffer.from('a')), 1000);
        res.on('close', () => clearInterval(t));
        return;
      }
      const pump = () => {
        while (!res.destroyed && tokenBytes < HUGE_TOKEN_BYTES) if (!write(chunk)) return void res.once('drain', pump);
        if (!res.destroyed) res.end('"}');
      };
      return pump();
    }
    json(res, 404, { error: 'not_found' });
  };
  const resource: Handler = (req, res, body) => {
    const url = new URL(req.url ?? '/', mcp);
    if (url.pathname === '/.well-known/oauth-protected-resource/mcp' || url.pathname === '/.well-known/oauth-protected-resource')
      return json(res, 200, { resource: `${mcp}/mcp`, authorization_servers: [as] });
    if (url.pathname === '/mcp')
      return res.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${mcp}/.well-known/oauth-protected-resource/mcp"` }).end();
    return authorization(req, res, body);
  };
  const main = await listen(resource);
  mcp = main.origin;
  const other = o.separateAs ? await listen(authorization) : undefined;
  as = other?.origin ?? mcp;
  const servers = [main.server, ...(other ? [other.server] : [])];
  return {
    url: `${mcp}/mcp`,
    asOrigin: as,
    asHits,
    tokenBytes: () => tokenBytes,
    close: async () => {
      for (const srv of servers) {
        srv.closeAllConnections();
        await new Promise<void>((r) => srv.close(() => r()));
      }
    },
  };
}
