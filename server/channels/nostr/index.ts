// Nostr: NIP-04 encrypted direct messages (kind 4) signed with nostr-tools and published to the configured relays over WebSocket.
import type { AbstractRelay } from 'nostr-tools/abstract-relay';
import * as nip19 from 'nostr-tools/nip19';
import type { finalizeEvent } from 'nostr-tools/pure';
import { z } from 'zod';
import { CrosstalkError, errorMessage } from '../../errors';
import { baseChannelConfig, DeliveryFailure } from '../delivery';
import { invalidTarget, stripChannelPrefix } from '../targets';
import type { ChannelPlugin, ResolvedTarget } from '../types';

const configSchema = z.object({
  ...baseChannelConfig,
  /** The bot's secret key, `nsec1…` or 64 hex characters. */
  privateKey: z.string().min(1),
  /** Relay URLs (`wss://…`); `apiBaseUrl` alone is taken as the one relay. */
  relays: z.array(z.string().regex(/^wss?:\/\//)).optional(),
});
type NostrConfig = z.infer<typeof configSchema>;

export function resolveNostrTarget(t: { to: string; accountId?: string }): ResolvedTarget {
  const raw = stripChannelPrefix(t.to, ['nostr']).replace(/^user:/i, '');
  let hex = raw.toLowerCase();
  if (raw.startsWith('npub1')) {
    try {
      const d = nip19.decode(raw);
      if (d.type !== 'npub') throw new Error('not an npub');
      hex = d.data;
    } catch (e) {
      throw invalidTarget('nostr', t.to, `not a valid npub: ${errorMessage(e)}`);
    }
  }
  if (!/^[0-9a-f]{64}$/.test(hex)) throw invalidTarget('nostr', t.to, 'expected an npub1… or a 64-hex public key (group chats are not supported)');
  return { to: hex, peer: { kind: 'direct', id: hex }, ...(t.accountId ? { accountId: t.accountId } : {}) };
}

function secretKey(k: string): Uint8Array {
  if (k.startsWith('nsec1')) {
    const d = nip19.decode(k);
    if (d.type === 'nsec') return d.data;
  }
  if (/^[0-9a-f]{64}$/i.test(k)) return Uint8Array.from(Buffer.from(k, 'hex'));
  throw new CrosstalkError('channel_error', 'config.channels.nostr.privateKey: expected nsec1… or 64 hex characters');
}

/** NIP-01 machine-readable prefixes of a refused EVENT, mapped to the retry policy's kinds. */
function classifyReason(reason: string): DeliveryFailure {
  const prefix = /^([a-z-]+):/.exec(reason)?.[1];
  switch (prefix) {
    case 'rate-limited':
      return new DeliveryFailure('rate_limited', reason);
    case 'auth-required':
    case 'restricted':
      return new DeliveryFailure('auth', reason);
    case 'error':
      // The event id is fixed across attempts; a relay drops the duplicate, so a retry is safe.
      return new DeliveryFailure('server', reason, { safeToRetry: true });
    default:
      return new DeliveryFailure('client', reason);
  }
}

/** Signing, encryption (the secp256k1 curves), relays and WebSocket, loaded with the first delivery (issue 24.5). */
let nostrModules: Promise<{ AbstractRelay: typeof AbstractRelay; nip04: typeof import('nostr-tools/nip04'); pure: typeof import('nostr-tools/pure'); WebSocket: typeof import('ws').default }> | undefined;
const nostrSdk = () =>
  (nostrModules ??= Promise.all([import('nostr-tools/abstract-relay'), import('nostr-tools/nip04'), import('nostr-tools/pure'), import('ws')]).then(([relay, nip04, pure, ws]) => ({
    AbstractRelay: relay.AbstractRelay,
    nip04,
    pure,
    WebSocket: ws.default,
  })));

export function createNostrChannel(): ChannelPlugin<NostrConfig> {
  // One signed event per send, so every attempt publishes the same id.
  const signed = new Map<string, ReturnType<typeof finalizeEvent>>();
  return {
    id: 'nostr',
    label: 'Nostr',
    threadScoping: 'none',
    configSchema,
    resolveTarget: resolveNostrTarget,
    async deliver(cfg, req) {
      const relays = cfg.relays ?? (cfg.apiBaseUrl ? [cfg.apiBaseUrl.replace(/^http/, 'ws')] : []);
      if (!relays.length) throw new CrosstalkError('channel_error', 'nostr has no relays (config.channels.nostr.relays)');
      const sk = secretKey(cfg.privateKey);
      const { AbstractRelay, nip04, pure, WebSocket } = await nostrSdk();
      const { finalizeEvent, verifyEvent } = pure;
      let event = signed.get(req.idempotencyKey);
      if (!event) {
        const content = nip04.encrypt(sk, req.target.to, req.text);
        event = finalizeEvent({ kind: 4, created_at: Math.floor(Date.now() / 1000), tags: [['p', req.target.to]], content }, sk);
        signed.set(req.idempotencyKey, event);
        if (signed.size > 1000) signed.delete(signed.keys().next().value!);
      }
      const failures: DeliveryFailure[] = [];
      const results = await Promise.all(
        relays.map(async (url) => {
          let relay: AbstractRelay | null = null;
          try {
            relay = await AbstractRelay.connect(url, { verifyEvent, websocketImplementation: WebSocket as unknown as typeof globalThis.WebSocket, timeout: cfg.timeoutMs, abort: req.signal });
            relay.publishTimeout = cfg.timeoutMs;
            await relay.publish(event);
            return true;
          } catch (e) {
            const reason = errorMessage(e);
            // "duplicate:" means the relay already has this very event: delivered.
            if (reason.startsWith('duplicate:')) return true;
            failures.push(relay ? classifyReason(reason) : new DeliveryFailure('network', `cannot reach relay ${url}: ${reason}`, { safeToRetry: true }));
            return false;
          } finally {
            relay?.close();
          }
        }),
      );
      if (results.some(Boolean)) {
        signed.delete(req.idempotencyKey);
        return { messageId: event.id };
      }
      // Every relay refused: report the most actionable reason (auth, then rate limit, then the rest).
      const order = ['auth', 'rate_limited', 'client', 'server', 'network'];
      failures.sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind));
      throw failures[0]!;
    },
  };
}
