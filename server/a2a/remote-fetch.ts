// The HTTP side of a remote A2A agent (CONTRACT §5 "A2A and remote agents"): every request stays on the card URL's
// origin, passes the webhook SSRF guard with redirects refused, ends with the run's abort signal or a timeout, and
// reads at most a capped number of bytes.
import { fetch as undiciFetch } from 'undici';
import { cappedBody } from '../capped-body';
import { checkWebhookUrl, sharedGuardedDispatcher } from '../webhooks/guard';

export interface RemoteFetchOptions {
  /** The only origin requests may go to: the card URL's. */
  origin: string;
  token?: string;
  allowPrivateNetwork: boolean;
  /** Each request (headers and body) ends after this long. */
  timeoutMs: number;
  /** A response body longer than this fails the request. */
  maxBytes: number;
}

/** Thrown when a remote breaks the rules (another origin, a redirect, a private address, an oversize body). */
export class RemoteRefused extends Error {}

/** A `fetch` for the A2A SDK client (and the card) that holds to the rules above; the caller's signal still ends it. */
export function remoteFetch(o: RemoteFetchOptions): typeof fetch {
  const f = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    if (url.origin !== o.origin) throw new RemoteRefused(`remote A2A call to ${url.origin} refused: calls stay on the card's origin ${o.origin}`);
    const refused = await checkWebhookUrl(url.toString(), o.allowPrivateNetwork);
    if (refused) throw new RemoteRefused(`remote A2A call refused: ${refused.replace(/^webhook /, '')}`);
    const headers = new Headers(init?.headers);
    if (o.token) headers.set('authorization', `Bearer ${o.token}`);
    const timeout = AbortSignal.timeout(o.timeoutMs);
    const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    const why = (e: unknown) => (timeout.aborted && !init?.signal?.aborted ? new RemoteRefused(`remote A2A call to ${url.origin} timed out after ${o.timeoutMs} ms`) : e);
    let res;
    try {
      res = await undiciFetch(url, {
        method: init?.method ?? 'GET',
        headers: headers as never,
        body: init?.body as never,
        redirect: 'manual',
        signal,
        dispatcher: sharedGuardedDispatcher(o.allowPrivateNetwork),
      });
    } catch (e) {
      throw why(e);
    }
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel().catch(() => undefined);
      throw new RemoteRefused(`remote A2A agent answered ${res.status} (a redirect to ${res.headers.get('location') ?? 'nowhere'}); redirects are refused`);
    }
    const nullBody = [101, 204, 205, 304].includes(res.status);
    if (nullBody) await res.body?.cancel().catch(() => undefined);
    const overflow = () => new RemoteRefused(`remote A2A agent sent more than ${o.maxBytes} bytes (${url}); the reply is refused`);
    const body = res.body && !nullBody ? cappedBody(res.body as ReadableStream<Uint8Array>, o.maxBytes, { overflow, why }) : null;
    // The timeout covers the body too: a remote that trickles bytes is cut off, not waited for.
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers as unknown as Headers });
  };
  return f as typeof fetch;
}
