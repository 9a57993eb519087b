// Per-platform behaviour for the loopback fakes: each API's success answers and its real 401 / 429 / 5xx shapes.
import type { FakeHandler, FakeReply } from './fake-platform';

export const CREDS = {
  slackToken: 'xoxb-test',
  telegramToken: '123456:TEST',
  discordToken: 'discord-bot-token',
  matrixToken: 'syt_matrix_token',
  teamsId: 'teams-app-id',
  teamsPassword: 'teams-secret',
  mattermostToken: 'mm-token',
  bluebubblesPassword: 'bb-pass',
  talkUser: 'crosstalk-bot',
  talkPassword: 'talk-app-pass',
  zaloToken: 'zalo-token',
  tlonCode: 'lidlut-tabwed-pillex-ridrup',
};

export interface PlatformFake {
  handler: FakeHandler;
  /** The platform's own answers for a bad credential, a rate limit (retry after ~0s) and a server error. */
  unauthorized: FakeReply;
  rateLimited: FakeReply;
  serverError: FakeReply;
}

const bearer = (h: Record<string, unknown>, token: string) => h.authorization === `Bearer ${token}`;
let seq = 0;
const nextId = () => ++seq;

export const FAKES: Record<string, PlatformFake> = {
  slack: {
    handler: (r) => {
      if (!['/api/chat.postMessage', '/api/chat.update', '/api/chat.postEphemeral', '/api/conversations.open'].includes(r.path)) return { body: { ok: false, error: 'unknown_method' } };
      if (!bearer(r.headers, CREDS.slackToken)) return { body: { ok: false, error: 'invalid_auth' } };
      // A bot's DM with a user: its id is D + the user id, here.
      if (r.path === '/api/conversations.open') return { body: { ok: true, channel: { id: `D${String(r.body.users).replace(/^U/, '')}` } } };
      if (r.path === '/api/chat.update') return { body: { ok: true, channel: r.body.channel, ts: r.body.ts, text: r.body.text, message: { text: r.body.text } } };
      if (r.path === '/api/chat.postEphemeral') return { body: { ok: true, message_ts: `1700000002.${String(nextId()).padStart(6, '0')}` } };
      const ts = `1700000001.${String(nextId()).padStart(6, '0')}`;
      return { body: { ok: true, channel: r.body.channel, ts, message: { type: 'message', text: r.body.text, ts, ...(r.body.thread_ts ? { thread_ts: r.body.thread_ts } : {}) } } };
    },
    // Slack answers auth failures with HTTP 200 and ok:false.
    unauthorized: { body: { ok: false, error: 'invalid_auth' } },
    rateLimited: { status: 429, headers: { 'retry-after': '1' }, body: { ok: false, error: 'ratelimited' } },
    serverError: { status: 503, body: 'Service Unavailable' },
  },
  telegram: {
    handler: (r) => {
      const m = /^\/bot([^/]+)\/(sendMessage|editMessageText|answerCallbackQuery)$/.exec(r.path);
      if (!m) return { status: 404, body: { ok: false, error_code: 404, description: 'Not Found' } };
      if (m[1] !== CREDS.telegramToken) return { status: 401, body: { ok: false, error_code: 401, description: 'Unauthorized' } };
      if (m[2] === 'answerCallbackQuery') return { body: { ok: true, result: true } };
      if (m[2] === 'editMessageText') {
        return { body: { ok: true, result: { message_id: r.body.message_id, date: Math.floor(Date.now() / 1000), edit_date: Math.floor(Date.now() / 1000), chat: { id: r.body.chat_id, type: 'private' }, text: r.body.text } } };
      }
      return {
        body: {
          ok: true,
          result: { message_id: 700 + nextId(), date: Math.floor(Date.now() / 1000), chat: { id: r.body.chat_id, type: String(r.body.chat_id).startsWith('-') ? 'supergroup' : 'private' }, text: r.body.text, ...(r.body.message_thread_id ? { message_thread_id: r.body.message_thread_id, is_topic_message: true } : {}) },
        },
      };
    },
    unauthorized: { status: 401, body: { ok: false, error_code: 401, description: 'Unauthorized' } },
    rateLimited: { status: 429, body: { ok: false, error_code: 429, description: 'Too Many Requests: retry after 1', parameters: { retry_after: 1 } } },
    serverError: { status: 502, body: { ok: false, error_code: 502, description: 'Bad Gateway' } },
  },
  discord: {
    handler: (r) => {
      // Interaction follow-ups go to the interaction's webhook, authorized by its token in the path.
      if (/^\/api\/v10\/webhooks\/\d+\/[^/]+$/.test(r.path)) return { body: { id: String(990000000000000000n + BigInt(nextId())), content: r.body.content, flags: r.body.flags } };
      if (r.headers.authorization !== `Bot ${CREDS.discordToken}`) return { status: 401, body: { message: '401: Unauthorized', code: 0 } };
      if (r.path === '/api/v10/users/@me/channels') return { body: { id: '880000000000000001', type: 1, recipients: [{ id: r.body.recipient_id }] } };
      const edit = /^\/api\/v10\/channels\/(\d+)\/messages\/(\d+)$/.exec(r.path);
      if (edit && r.method === 'PATCH') return { body: { id: edit[2], channel_id: edit[1], content: r.body.content, components: r.body.components ?? [], type: 0 } };
      const m = /^\/api\/v10\/channels\/(\d+)\/messages$/.exec(r.path);
      if (!m) return { status: 404, body: { message: '404: Not Found', code: 0 } };
      return { body: { id: String(990000000000000000n + BigInt(nextId())), channel_id: m[1], content: r.body.content, type: 0 } };
    },
    unauthorized: { status: 401, body: { message: '401: Unauthorized', code: 0 } },
    rateLimited: {
      status: 429,
      headers: { 'retry-after': '0.05', 'x-ratelimit-scope': 'user', 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset-after': '0.05', 'x-ratelimit-bucket': 'abc' },
      body: { message: 'You are being rate limited.', retry_after: 0.05, global: false },
    },
    serverError: { status: 502, body: '<html>502 Bad Gateway</html>', headers: { 'content-type': 'text/html' } },
  },
  matrix: {
    handler: (r) => {
      if (!bearer(r.headers, CREDS.matrixToken)) return { status: 401, body: { errcode: 'M_UNKNOWN_TOKEN', error: 'Invalid access token passed.' } };
      if (r.path === '/_matrix/client/v3/account/whoami') return { body: { user_id: '@crosstalk:example.org' } };
      if (r.path.endsWith('/account_data/m.direct')) return r.method === 'GET' ? { status: 404, body: { errcode: 'M_NOT_FOUND', error: 'Account data not found' } } : { body: {} };
      if (r.path === '/_matrix/client/v3/createRoom') return { body: { room_id: '!dm1:example.org' } };
      const m = /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/send\/m\.room\.message\/([^/]+)$/.exec(r.path);
      if (m && r.method === 'PUT') return { body: { event_id: `$${decodeURIComponent(m[2]!)}` } };
      return { status: 404, body: { errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' } };
    },
    unauthorized: { status: 401, body: { errcode: 'M_UNKNOWN_TOKEN', error: 'Invalid access token passed.' } },
    rateLimited: { status: 429, body: { errcode: 'M_LIMIT_EXCEEDED', error: 'Too Many Requests', retry_after_ms: 20 } },
    serverError: { status: 502, body: '<html>502 Bad Gateway</html>', headers: { 'content-type': 'text/html' } },
  },
  msteams: {
    handler: (r) => {
      if (r.path === '/token') {
        if (r.body.client_id !== CREDS.teamsId || r.body.client_secret !== CREDS.teamsPassword) return { status: 401, body: { error: 'invalid_client', error_description: 'AADSTS7000215: Invalid client secret provided.' } };
        return { body: { token_type: 'Bearer', expires_in: 3600, ext_expires_in: 3600, access_token: 'teams-access-token' } };
      }
      if (!bearer(r.headers, 'teams-access-token')) return { status: 401, body: { message: 'Authorization has been denied for this request.' } };
      if (r.path === '/v3/conversations') return { status: 201, body: { id: 'a:1dmconversation' } };
      if (/^\/v3\/conversations\/[^/]+\/activities(\/[^/]+)?$/.test(r.path)) return { status: 201, body: { id: `1700000000${nextId()}` } };
      return { status: 404, body: { error: { code: 'NotFound', message: 'no route' } } };
    },
    unauthorized: { status: 401, body: { error: { code: 'Unauthorized', message: 'Authorization has been denied for this request.' } } },
    rateLimited: { status: 429, headers: { 'retry-after': '0' }, body: { error: { code: 'TooManyRequests', message: 'Too many requests' } } },
    serverError: { status: 500, body: { error: { code: 'ServiceError', message: 'Internal server error' } } },
  },
  mattermost: {
    handler: (r) => {
      if (!bearer(r.headers, CREDS.mattermostToken)) return { status: 401, body: { id: 'api.context.session_expired.app_error', message: 'Invalid or expired session, please login again.', status_code: 401 } };
      if (r.path === '/api/v4/users/me') return { body: { id: 'botuserid00000000000000000', username: 'crosstalk' } };
      const u = /^\/api\/v4\/users\/username\/(.+)$/.exec(r.path);
      if (u) return { body: { id: `uid${u[1]}`.padEnd(26, '0').slice(0, 26), username: u[1] } };
      if (r.path === '/api/v4/channels/direct') return { status: 201, body: { id: 'dmchannel00000000000000000', type: 'D' } };
      if (r.path === '/api/v4/posts') return { status: 201, body: { id: `post${nextId()}`.padEnd(26, 'x'), channel_id: r.body.channel_id, message: r.body.message, root_id: r.body.root_id ?? '' } };
      return { status: 404, body: { id: 'api.context.404.app_error', message: 'Sorry, we could not find the page.', status_code: 404 } };
    },
    unauthorized: { status: 401, body: { id: 'api.context.session_expired.app_error', message: 'Invalid or expired session, please login again.', status_code: 401 } },
    rateLimited: { status: 429, headers: { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '0' }, body: 'limit exceeded\n' },
    serverError: { status: 500, body: { id: 'app.post.save.app_error', message: 'Unable to save the post.', status_code: 500 } },
  },
  bluebubbles: {
    handler: (r) => {
      if (r.query.get('password') !== CREDS.bluebubblesPassword) return { status: 401, body: { status: 401, message: 'Unauthorized', error: { type: 'Authentication Error', message: 'Invalid password!' } } };
      if (r.path !== '/api/v1/message/text') return { status: 404, body: { status: 404, message: 'Not Found' } };
      return { body: { status: 200, message: 'Message sent!', data: { guid: `p:0/${r.body.tempGuid}`, text: r.body.message, chats: [{ guid: r.body.chatGuid }] } } };
    },
    unauthorized: { status: 401, body: { status: 401, message: 'Unauthorized', error: { type: 'Authentication Error', message: 'Invalid password!' } } },
    rateLimited: { status: 429, headers: { 'retry-after': '0' }, body: { status: 429, message: 'Too Many Requests' } },
    serverError: { status: 500, body: { status: 500, message: 'Message Send Error', error: { type: 'iMessage Error', message: 'Failed to send message!' } } },
  },
  'nextcloud-talk': {
    handler: (r) => {
      const ok = r.headers.authorization === `Basic ${Buffer.from(`${CREDS.talkUser}:${CREDS.talkPassword}`).toString('base64')}` && r.headers['ocs-apirequest'] === 'true';
      if (!ok) return { status: 401, body: { ocs: { meta: { status: 'failure', statuscode: 401, message: 'Current user is not logged in' }, data: [] } } };
      if (r.path === '/ocs/v2.php/apps/spreed/api/v4/room') return { body: { ocs: { meta: { status: 'ok', statuscode: 200, message: 'OK' }, data: { token: 'dmroomtok', type: 1 } } } };
      if (/^\/ocs\/v2\.php\/apps\/spreed\/api\/v1\/chat\/[a-z0-9]+$/i.test(r.path)) return { status: 201, body: { ocs: { meta: { status: 'ok', statuscode: 201, message: 'OK' }, data: { id: 4200 + nextId(), message: r.body.message, referenceId: r.body.referenceId } } } };
      return { status: 404, body: { ocs: { meta: { status: 'failure', statuscode: 404, message: 'Not found' }, data: [] } } };
    },
    unauthorized: { status: 401, body: { ocs: { meta: { status: 'failure', statuscode: 401, message: 'Current user is not logged in' }, data: [] } } },
    rateLimited: { status: 429, headers: { 'retry-after': '0' }, body: { ocs: { meta: { status: 'failure', statuscode: 429, message: 'Reached maximum delay' }, data: [] } } },
    serverError: { status: 503, body: { ocs: { meta: { status: 'failure', statuscode: 503, message: 'Service unavailable' }, data: [] } } },
  },
  zalo: {
    handler: (r) => {
      const m = /^\/bot([^/]+)\/sendMessage$/.exec(r.path);
      if (!m || m[1] !== CREDS.zaloToken) return { body: { ok: false, error_code: 401, description: 'Unauthorized' } };
      return { body: { ok: true, result: { message_id: `zmsg${nextId()}`, date: Date.now() } } };
    },
    unauthorized: { body: { ok: false, error_code: 401, description: 'Unauthorized' } },
    rateLimited: { status: 429, headers: { 'retry-after': '0' }, body: { ok: false, error_code: 429, description: 'Too Many Requests' } },
    serverError: { status: 500, body: { ok: false, error_code: 500, description: 'Internal Server Error' } },
  },
  tlon: {
    handler: (r) => {
      if (r.path === '/~/login') {
        if (r.body.password !== CREDS.tlonCode) return { status: 400, body: 'invalid code' };
        return { status: 204, headers: { 'set-cookie': 'urbauth-~zod=0v5.abcde; Path=/; Max-Age=604800' } };
      }
      if (/^\/~\/channel\//.test(r.path) && r.method === 'PUT') {
        if (!String(r.headers.cookie ?? '').startsWith('urbauth-~zod=')) return { status: 403, body: 'forbidden' };
        return { status: 204 };
      }
      return { status: 404, body: 'not found' };
    },
    unauthorized: { status: 403, body: 'forbidden' },
    rateLimited: { status: 429, headers: { 'retry-after': '0' }, body: 'slow down' },
    serverError: { status: 500, body: 'crash' },
  },
  webhook: {
    handler: (r) => ({ body: { messageId: `hook-${r.body.id}` } }),
    unauthorized: { status: 401, body: { error: 'bad signature' } },
    rateLimited: { status: 429, headers: { 'retry-after': '0' }, body: { error: 'slow down' } },
    serverError: { status: 503, body: { error: 'down' } },
  },
};
