// Tlon (Urbit): pokes through the ship's Eyre HTTP API after a +code login; DMs via %chat, group channels via %channels.
import crypto from 'node:crypto';
import { z } from 'zod';
import { CrosstalkError } from '../../errors';
import { apiUrl, baseChannelConfig, DeliveryFailure, httpJson } from '../delivery';
import { invalidTarget, stripChannelPrefix } from '../targets';
import type { ChannelPlugin, ResolvedTarget } from '../types';

const configSchema = z.object({
  ...baseChannelConfig,
  /** The bot's ship, `~sampel-palnet`. */
  ship: z.string().regex(/^~?[a-z-]+$/),
  /** The ship's +code. */
  code: z.string().min(1),
});
type TlonConfig = z.infer<typeof configSchema>;

const SHIP = /^~?([a-z]{3}(?:-?[a-z]{3,6})*)$/;

/** `~ship` is a DM; `chat/~host/name` (or `~host/name`) is a group channel, keyed `host/name`. */
export function resolveTlonTarget(t: { to: string; accountId?: string }): ResolvedTarget {
  const raw = stripChannelPrefix(t.to, ['tlon', 'urbit']).trim().toLowerCase();
  const acct = t.accountId ? { accountId: t.accountId } : {};
  const nest = /^(?:chat\/)?~([a-z-]+)\/([a-z0-9-]+)$/.exec(raw);
  if (nest) return { to: `chat/~${nest[1]}/${nest[2]}`, peer: { kind: 'group', id: `${nest[1]}/${nest[2]}` }, ...acct };
  const ship = SHIP.exec(raw.replace(/^user:/, ''));
  if (ship) return { to: `~${ship[1]}`, peer: { kind: 'direct', id: ship[1]! }, ...acct };
  throw invalidTarget('tlon', t.to, 'expected ~ship or chat/~host/channel');
}

export function createTlonChannel(): ChannelPlugin<TlonConfig> {
  const cookies = new Map<string, string>();
  async function login(cfg: TlonConfig, base: string, signal?: AbortSignal): Promise<string> {
    const hit = cookies.get(base);
    if (hit) return hit;
    const res = await httpJson({
      url: apiUrl(base, '/~/login'),
      body: new URLSearchParams({ password: cfg.code }),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      timeoutMs: cfg.timeoutMs,
      signal,
    }).catch((e: unknown) => {
      // Eyre answers a wrong +code with 400: that is an authentication failure.
      if (e instanceof DeliveryFailure && e.o.status === 400) throw new DeliveryFailure('auth', 'the ship refused the +code', { status: 400 });
      throw e;
    });
    const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!;
    if (!cookie.startsWith('urbauth-')) throw new DeliveryFailure('auth', 'the ship sent no session cookie');
    cookies.set(base, cookie);
    return cookie;
  }
  return {
    id: 'tlon',
    label: 'Tlon',
    threadScoping: 'none',
    configSchema,
    resolveTarget: resolveTlonTarget,
    async deliver(cfg, req) {
      if (!cfg.apiBaseUrl) throw new CrosstalkError('channel_error', 'tlon needs the ship url (config.channels.tlon.apiBaseUrl)');
      const base = cfg.apiBaseUrl;
      const our = `~${cfg.ship.replace(/^~/, '')}`;
      const sent = Date.now();
      const story = [{ inline: [req.text] }];
      const t = req.target;
      const poke = t.peer.kind === 'direct'
        ? { app: 'chat', mark: 'chat-dm-action', json: { ship: t.to, diff: { id: `${our}/${sent}`, delta: { add: { memo: { content: story, author: our, sent }, kind: null, time: null } } } } }
        : { app: 'channels', mark: 'channel-action', json: { channel: { nest: t.to, action: { post: { add: { content: story, author: our, sent, kind: '/chat', blob: null, meta: null } } } } } };
      const cookie = await login(cfg, base, req.signal);
      try {
        await httpJson({
          url: apiUrl(base, `/~/channel/crosstalk-${crypto.randomUUID()}`),
          method: 'PUT',
          headers: { cookie },
          body: [{ id: 1, action: 'poke', ship: our.slice(1), ...poke }],
          timeoutMs: cfg.timeoutMs,
          signal: req.signal,
        });
      } catch (e) {
        if (e instanceof DeliveryFailure && e.kind === 'auth') cookies.delete(base);
        throw e;
      }
      return { messageId: `${our}/${sent}` };
    },
  };
}
