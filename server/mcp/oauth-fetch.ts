// The HTTP side of MCP OAuth (README "Security"): every request of the SDK's auth() — discovery, registration, the
// token exchange and refresh — is capped in bytes and time, and one to an authorization server off the MCP server's
// own origin passes the webhook SSRF guard, unless the operator chose a server on a private address or allowed private networks.
import { fetch as undiciFetch } from 'undici';
import { checkWebhookUrl, hostAddresses, isPrivateAddress, sharedGuardedDispatcher } from '../webhooks/guard';
import { cappedFetch } from './limits';

/** An OAuth answer (metadata, a registration, tokens) is a small JSON document: one past this is not read. */
export const OAUTH_MAX_BYTES = 256 * 1024;
/** Each OAuth request, its answer read included, ends after this long. */
export const OAUTH_TIMEOUT_MS = 30_000;
/** At most this much of an authorization server's error answer is kept in an error (the SDK quotes the raw body). */
export const OAUTH_ERROR_BODY_CHARS = 200;

/** Whether a URL's host is a private, loopback or link-local address, or resolves to one (the webhook guard's ranges). */
export async function onPrivateNetwork(url: string): Promise<boolean> {
  // Not known to be private (it does not resolve): the guard applies.
  return (await hostAddresses(new URL(url).hostname.replace(/^\[|\]$/g, '')))?.some(isPrivateAddress) ?? false;
}

/**
 * How a server URL is classified, and the deadline of a request: what the tests change (every test server is on
 * 127.0.0.1, which is private; a minute is long for a test).
 */
export const oauthNetwork = { serverIsPrivate: onPrivateNetwork, timeoutMs: OAUTH_TIMEOUT_MS };

/**
 * Where an OAuth request to `target` may go: refused (why), through the SSRF guard, or straight. The MCP server's own
 * origin is the operator's choice; another origin is what the server's metadata named, and it may not be a private,
 * loopback or link-local address unless the MCP server itself is on one (the operator chose a local server) or
 * `webhooks.allowPrivateNetwork` is set. Before, a remote server naming 169.254.169.254 or 127.0.0.1 as its
 * authorization server had the gateway GET its well-knowns and POST /register there.
 */
export async function oauthRoute(target: string, serverUrl: string, allowPrivateNetwork: boolean): Promise<{ refused: string } | { guard: boolean }> {
  const to = new URL(target);
  if (to.protocol !== 'http:' && to.protocol !== 'https:') return { refused: `MCP OAuth request to ${to.protocol} refused: only http(s)` };
  if (to.origin === new URL(serverUrl).origin || allowPrivateNetwork || (await oauthNetwork.serverIsPrivate(serverUrl))) return { guard: false };
  const refused = await checkWebhookUrl(target, false);
  if (!refused) return { guard: true };
  const why = refused.replace(/^webhook /, '').replace(/; set webhooks\.allowPrivateNetwork to allow it$/, '');
  return { refused: `MCP OAuth request to ${to.origin} refused: ${why} (the MCP server ${new URL(serverUrl).origin} is not on a private network; webhooks.allowPrivateNetwork allows it)` };
}

/**
 * undici's fetch through the guard's dispatcher. Redirects are not followed here (the dispatcher does not see an IP
 * address a redirect names): the SDK follows a same-origin one itself, through this fetch again.
 */
const guardedFetch = (async (input: RequestInfo | URL, init?: RequestInit) =>
  (await undiciFetch(input as never, { ...(init as object), redirect: init?.redirect === 'error' ? 'error' : 'manual', dispatcher: sharedGuardedDispatcher(false) } as never)) as unknown as Response) as typeof fetch;

/**
 * The fetch for auth() of the MCP server at `serverUrl`: each request routed by oauthRoute, capped (OAUTH_MAX_BYTES)
 * and ended at a deadline, its body read included. Before, the SDK read a /token answer with the global fetch: 4 GB
 * of JSON took the gateway to 8.4 GB and stalled it a minute. An error answer's body is cut short before the SDK
 * quotes it into errors (and so into `status.mcp[].error`).
 */
export function oauthFetch(serverUrl: string, allowPrivateNetwork: boolean): typeof fetch {
  const caps = (fetchImpl?: typeof fetch) => cappedFetch(OAUTH_MAX_BYTES, () => undefined, { timeoutMs: oauthNetwork.timeoutMs, peer: 'the authorization server', fetch: fetchImpl });
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const route = await oauthRoute(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url, serverUrl, allowPrivateNetwork);
    if ('refused' in route) throw new Error(route.refused);
    return shortErrorBody(await caps(route.guard ? guardedFetch : undefined)(input, init));
  }) as typeof fetch;
}

/**
 * Requests of the streamable HTTP transport: those to the MCP endpoint itself go to `mcp`; the rest are the SDK's OAuth
 * requests (its auth() runs on the transport's fetch when a request is refused with 401), which go to `oauth`.
 */
export function routeOAuth(endpoint: string, mcp: typeof fetch, oauth: typeof fetch): typeof fetch {
  const at = new URL(endpoint);
  const isEndpoint = (u: URL) => u.origin === at.origin && u.pathname === at.pathname && u.search === at.search;
  return ((input: RequestInfo | URL, init?: RequestInit) => (isEndpoint(new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url)) ? mcp : oauth)(input, init)) as typeof fetch;
}

/**
 * An error answer cut short: an OAuth error document (`{"error": …}`) to its own fields, each at most
 * OAUTH_ERROR_BODY_CHARS (the SDK reads it: a refused refresh's invalid_grant starts a new authorization); any other
 * body to OAUTH_ERROR_BODY_CHARS, as the SDK quotes such a raw body in its error (an internal page, a secret).
 */
async function shortErrorBody(res: Response): Promise<Response> {
  if (res.ok || !res.body || (res.status >= 300 && res.status < 400)) return res;
  const text = await res.text();
  const cut = (v: unknown) => (typeof v === 'string' ? (v.length > OAUTH_ERROR_BODY_CHARS ? `${v.slice(0, OAUTH_ERROR_BODY_CHARS)}…` : v) : undefined);
  let body: string;
  try {
    const doc = JSON.parse(text) as Record<string, unknown>;
    if (typeof doc.error !== 'string') throw new Error('not an OAuth error');
    body = JSON.stringify({ error: cut(doc.error), error_description: cut(doc.error_description), error_uri: cut(doc.error_uri) });
  } catch {
    body = text.length > OAUTH_ERROR_BODY_CHARS ? `${cut(text)} (${text.length} characters)` : text;
  }
  const headers = new Headers(res.headers);
  headers.delete('content-length');
  return new Response(body, { status: res.status, statusText: res.statusText, headers });
}
