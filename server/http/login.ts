// GET /login?token=… — trades the API token for the http-only login cookie, then redirects to the room (Next's route and tests share it).
import { AUTH_COOKIE, safeEqual } from '../auth';

const COOKIE_MAX_AGE_S = 30 * 24 * 3600;

export function handleLogin(req: Request, token: string): Response {
  const url = new URL(req.url);
  const given = url.searchParams.get('token') ?? '';
  if (!given || !safeEqual(given, token)) {
    return new Response('401 Unauthorized: the login token is missing or wrong. Use the login URL printed by the server.\n', {
      status: 401,
      headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
    });
  }
  const secure = req.headers.get('x-forwarded-proto') === 'https' || url.protocol === 'https:';
  const cookie = [
    `${AUTH_COOKIE}=${encodeURIComponent(token)}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${COOKIE_MAX_AGE_S}`,
    ...(secure ? ['Secure'] : []),
  ].join('; ');
  // A relative Location keeps the redirect on whatever host the browser used.
  return new Response(null, {
    status: 303,
    headers: { location: '/', 'set-cookie': cookie, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' },
  });
}
