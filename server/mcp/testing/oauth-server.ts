// A real OAuth-protected MCP server over streamable HTTP on 127.0.0.1, for the OAuth tests: the SDK's own server-side auth
// (mcpAuthRouter: metadata, registration, authorize, token; requireBearerAuth on /mcp) over a small in-memory provider.
import crypto from 'node:crypto';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Response } from 'express';
import { InvalidGrantError, InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import { getOAuthProtectedResourceMetadataUrl, mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

export interface OAuthMcpServer {
  /** The MCP endpoint (`…/mcp`). */
  url: string;
  /** What happened, in order: `register`, `authorize`, `token code`, `refresh ok (old token valid)`, `refresh refused`, `call whoami <token>`. */
  log: string[];
  /** Access token lifetime in seconds for tokens issued from now on. */
  expiresIn: number;
  /** Refuse every refresh (invalid_grant) from now on. */
  refuseRefresh: boolean;
  /** Scopes /mcp requires from now on (a token without them is 403 insufficient_scope: a step-up). */
  requiredScopes: string[];
  /** Forgets every access token (the next request carrying one is 401). */
  revokeAll(): void;
  close(): Promise<void>;
}

export async function startOAuthMcpServer(o: { expiresIn?: number } = {}): Promise<OAuthMcpServer> {
  const app = express();
  const clients = new Map<string, OAuthClientInformationFull>();
  const codes = new Map<string, { clientId: string; params: AuthorizationParams }>();
  const access = new Map<string, { clientId: string; expiresAt: number; scopes: string[] }>();
  const refresh = new Map<string, { clientId: string; access: string }>();
  const log: string[] = [];

  const clientsStore: OAuthRegisteredClientsStore = {
    getClient: (id) => clients.get(id),
    registerClient: (c) => {
      const full = { ...c, client_id: `client-${crypto.randomUUID()}`, client_id_issued_at: Math.floor(Date.now() / 1000) } as OAuthClientInformationFull;
      clients.set(full.client_id, full);
      log.push('register');
      return full;
    },
  };

  const issue = (clientId: string, scopes: string[]): OAuthTokens => {
    const token = `at-${crypto.randomBytes(12).toString('hex')}`;
    const rt = `rt-${crypto.randomBytes(12).toString('hex')}`;
    access.set(token, { clientId, expiresAt: Date.now() + fixture.expiresIn * 1000, scopes });
    refresh.set(rt, { clientId, access: token });
    return { access_token: token, token_type: 'bearer', expires_in: fixture.expiresIn, refresh_token: rt, scope: scopes.join(' ') };
  };

  const provider: OAuthServerProvider = {
    clientsStore,
    async authorize(client, params, res: Response) {
      // The person consents at once: the browser goes straight back to the client's redirect URI with a code.
      const code = `code-${crypto.randomBytes(12).toString('hex')}`;
      codes.set(code, { clientId: client.client_id, params });
      log.push(`authorize${params.resource ? ` resource=${params.resource.href}` : ''}${params.scopes?.length ? ` scope=${params.scopes.join(' ')}` : ''}`);
      const to = new URL(params.redirectUri);
      to.searchParams.set('code', code);
      if (params.state) to.searchParams.set('state', params.state);
      res.redirect(302, to.href);
    },
    async challengeForAuthorizationCode(_client, code) {
      const c = codes.get(code);
      if (!c) throw new InvalidGrantError('unknown code');
      return c.params.codeChallenge;
    },
    async exchangeAuthorizationCode(client, code) {
      const c = codes.get(code);
      if (!c || c.clientId !== client.client_id) throw new InvalidGrantError('unknown code');
      codes.delete(code);
      log.push('token code');
      return issue(client.client_id, c.params.scopes ?? []);
    },
    async exchangeRefreshToken(client, rt) {
      const r = refresh.get(rt);
      if (fixture.refuseRefresh || !r || r.clientId !== client.client_id) {
        log.push('refresh refused');
        throw new InvalidGrantError('refresh token refused');
      }
      refresh.delete(rt);
      const old = access.get(r.access);
      log.push(`refresh ok (old token ${old && old.expiresAt > Date.now() ? 'valid' : 'expired'})`);
      return issue(client.client_id, old?.scopes ?? []);
    },
    async verifyAccessToken(token): Promise<AuthInfo> {
      const a = access.get(token);
      if (!a || a.expiresAt <= Date.now()) throw new InvalidTokenError('unknown or expired token');
      return { token, clientId: a.clientId, scopes: a.scopes, expiresAt: Math.floor(a.expiresAt / 1000) };
    },
  };

  const server: http.Server = await new Promise((r) => {
    const s = app.listen(0, '127.0.0.1', () => r(s));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const mcpUrl = new URL(`${base}/mcp`);

  app.use(
    mcpAuthRouter({
      provider,
      issuerUrl: new URL(base),
      resourceServerUrl: mcpUrl,
      scopesSupported: ['tools'],
      authorizationOptions: { rateLimit: false },
      clientRegistrationOptions: { rateLimit: false },
      tokenOptions: { rateLimit: false },
    }),
  );
  const resourceMetadataUrl = getOAuthProtectedResourceMetadataUrl(mcpUrl);
  const bearer: express.RequestHandler = (req, res, next) => requireBearerAuth({ verifier: provider, resourceMetadataUrl, requiredScopes: fixture.requiredScopes })(req, res, next);
  app.post('/mcp', express.json(), bearer, async (req, res) => {
    // Stateless: one server and transport per request, as the SDK's stateless examples do.
    const mcp = new McpServer({ name: 'oauth-test', version: '1.0.0' });
    mcp.registerTool('whoami', { description: 'Says which token called', inputSchema: {} }, async (_args, extra) => {
      log.push(`call whoami ${extra.authInfo?.token ?? '-'}`);
      return { content: [{ type: 'text', text: `hello ${extra.authInfo?.clientId ?? 'nobody'}` }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    await mcp.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  app.get('/mcp', (_req, res) => void res.status(405).set('allow', 'POST').end());

  const fixture: OAuthMcpServer = {
    url: mcpUrl.href,
    log,
    expiresIn: o.expiresIn ?? 3600,
    refuseRefresh: false,
    requiredScopes: [],
    revokeAll: () => access.clear(),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
  return fixture;
}
