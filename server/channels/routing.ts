// Session routing for channels: one key builder for inbound and outbound (dmScope, identityLinks, threads), and session entries.
import { asciiLower } from '../ascii-case';
import crypto from 'node:crypto';
import type { CrosstalkConfig } from '../config';
import { sessionKindOf } from '../sessions/keys';
import type { Store } from '../store/store';
import type { AnyChannelPlugin, ChatType, InboundMessage, OutboundTarget, Peer, ResolvedTarget } from './types';

export type DmScope = CrosstalkConfig['session']['dmScope'];

export interface SessionRoute {
  agentId: string;
  channel: string;
  accountId?: string;
  chatType: ChatType;
  /** The conversation, as the platform spells it. */
  peer: Peer;
  /** The peer after identity links (what the key uses for direct chats). */
  peerKey: string;
  threadId?: string;
  baseSessionKey: string;
  sessionKey: string;
}

/** The suffix a key part gets when its id is not spelled as is (`.` and 12 hex digits of the id's SHA-256). */
const HASHED = /\.[0-9a-f]{12}$/;
/** The longest key part: a key of channel, account, peer and thread stays under MAX_SESSION_KEY (1,024). */
export const MAX_KEY_PART = 256;

/**
 * An id as a session key part (CONTRACT §4: `[a-z0-9:._+-]`), one to one: lowercased (platform ids are
 * case-insensitive, so ids differing only in case share a part). An id spelled with those characters only (numeric
 * Telegram ids, Slack's `C0ABC`, phone numbers) is the part as it always was. Any other id has its other characters
 * replaced by `-` and gets `.` + 12 hex digits of the SHA-256 of the id (ASCII letters lowercased, nothing trimmed): `jürgen` and `jörgen`,
 * or `a/b#c` and `a-b-c`, were one part (`j-rgen`), one session for two senders. So does a clean id that already ends
 * the way such a part does, or holds `:thread:` (no id can be picked to equal another's part, or another conversation's
 * thread), and one longer than MAX_KEY_PART (cut to fit).
 */
export function keyPart(id: string): string {
  // Only ASCII letters fold, and nothing is trimmed: `kate`, ` kate`, `kate\u00a0`, `\ufeffkate` and `\u212Aate` (the
  // Kelvin sign) were one part (trim() strips Unicode spaces, toLowerCase() folds the Kelvin sign to k: probe V).
  const raw = asciiLower(id);
  const s = raw.replace(/[^a-z0-9:._+-]/g, '-');
  if (s && s === raw && s.length <= MAX_KEY_PART && !HASHED.test(s) && !s.includes(':thread:')) return s;
  const hash = crypto.createHash('sha256').update(raw).digest('hex').slice(0, 12);
  return `${(s || '-').slice(0, MAX_KEY_PART - 13)}.${hash}`;
}

/** `identityLinks: {"alice": ["telegram:4242"]}` makes the direct peer `alice` for telegram user 4242. */
export function linkedPeer(channel: string, peerId: string, identityLinks: Record<string, string[]>): string | null {
  const want = asciiLower(`${channel}:${peerId}`);
  for (const [name, ids] of Object.entries(identityLinks)) {
    if (ids.some((i) => asciiLower(i.trim()) === want)) return name;
  }
  return null;
}

export interface BuildKeyInput {
  agentId: string;
  channel: string;
  accountId?: string;
  peer: Peer;
  dmScope: DmScope;
  identityLinks: Record<string, string[]>;
  /** Voice and other pinned channels: always `agent:<id>:<channel>:direct:<peer>`, no identity link. */
  pinned?: boolean;
}

/** The conversation's key before any thread suffix, and the peer it used. */
export function buildAgentSessionKey(i: BuildKeyInput): { key: string; peerKey: string } {
  const ch = keyPart(i.channel);
  if (i.peer.kind !== 'direct') {
    const peerKey = keyPart(i.peer.id);
    return { key: `agent:${i.agentId}:${ch}:${i.peer.kind}:${peerKey}`, peerKey };
  }
  if (i.pinned) {
    const peerKey = keyPart(i.peer.id);
    return { key: `agent:${i.agentId}:${ch}:direct:${peerKey}`, peerKey };
  }
  const peerKey = keyPart(linkedPeer(i.channel, i.peer.id, i.identityLinks) ?? i.peer.id);
  switch (i.dmScope) {
    case 'main':
      return { key: `agent:${i.agentId}:main`, peerKey };
    case 'per-peer':
      return { key: `agent:${i.agentId}:direct:${peerKey}`, peerKey };
    case 'per-account-channel-peer':
      return { key: `agent:${i.agentId}:${ch}:${keyPart(i.accountId ?? 'default')}:direct:${peerKey}`, peerKey };
    default:
      return { key: `agent:${i.agentId}:${ch}:direct:${peerKey}`, peerKey };
  }
}

/** A thread adds `:thread:<threadId>` to the conversation's key. */
export function resolveThreadSessionKeys(baseSessionKey: string, threadId: string | undefined): { sessionKey: string; baseSessionKey: string } {
  if (!threadId) return { sessionKey: baseSessionKey, baseSessionKey };
  return { sessionKey: `${baseSessionKey}:thread:${keyPart(threadId)}`, baseSessionKey };
}

interface RouteInput {
  plugin: AnyChannelPlugin;
  agentId: string;
  peer: Peer;
  sessionThreadId?: string;
  accountId?: string;
  session: Pick<CrosstalkConfig['session'], 'dmScope' | 'identityLinks'>;
}

function route(i: RouteInput): SessionRoute {
  const { key, peerKey } = buildAgentSessionKey({
    agentId: i.agentId,
    channel: i.plugin.id,
    accountId: i.accountId,
    peer: i.peer,
    dmScope: i.session.dmScope,
    identityLinks: i.session.identityLinks,
    pinned: i.plugin.pinnedDirectForm,
  });
  const threadId = i.plugin.threadScoping === 'suffix' ? i.sessionThreadId : undefined;
  const { sessionKey, baseSessionKey } = resolveThreadSessionKeys(key, threadId);
  return {
    agentId: i.agentId,
    channel: i.plugin.id,
    ...(i.accountId ? { accountId: i.accountId } : {}),
    chatType: i.peer.kind,
    peer: i.peer,
    peerKey,
    ...(threadId ? { threadId } : {}),
    baseSessionKey,
    sessionKey,
  };
}

/** The session an outbound send belongs to: the same key an inbound message from that target would get. */
export function resolveOutboundSessionRoute(
  plugin: AnyChannelPlugin,
  target: OutboundTarget | ResolvedTarget,
  o: { agentId: string; session: Pick<CrosstalkConfig['session'], 'dmScope' | 'identityLinks'> },
): { route: SessionRoute; target: ResolvedTarget } {
  const resolved = 'peer' in target ? target : plugin.resolveTarget(target);
  return {
    route: route({ plugin, agentId: o.agentId, peer: resolved.peer, sessionThreadId: resolved.sessionThreadId, accountId: resolved.accountId, session: o.session }),
    target: resolved,
  };
}

/** The session an inbound message belongs to. */
export function resolveInboundSessionRoute(
  plugin: AnyChannelPlugin,
  msg: InboundMessage,
  o: { agentId: string; session: Pick<CrosstalkConfig['session'], 'dmScope' | 'identityLinks'> },
): SessionRoute {
  return route({ plugin, agentId: o.agentId, peer: msg.peer, sessionThreadId: msg.sessionThreadId, accountId: msg.accountId, session: o.session });
}

/** Session metadata, shaped alike whichever side spoke first (provider, from, to, chat type, account, originating ids). */
export function sessionMeta(r: SessionRoute, o: { from: string; deliverTo: string; deliverThreadId?: string }): Record<string, unknown> {
  return {
    provider: r.channel,
    chatType: r.chatType,
    from: `${r.channel}:${o.from}`,
    to: `${r.channel}:${r.peer.kind}:${r.peer.id}`,
    ...(r.accountId ? { accountId: r.accountId } : {}),
    ...(r.threadId ? { threadId: r.threadId } : {}),
    originatingChannel: r.channel,
    originatingTo: o.deliverTo,
    ...(o.deliverThreadId ? { originatingThreadId: o.deliverThreadId } : {}),
  };
}

/** Creates the target's session when missing, with the metadata an inbound message would have written. */
export async function ensureOutboundSessionEntry(store: Store, r: SessionRoute, target: ResolvedTarget): Promise<void> {
  await store.ensureSession({
    key: r.sessionKey,
    agentId: r.agentId,
    kind: sessionKindOf(r.sessionKey),
    meta: sessionMeta(r, { from: target.peer.id, deliverTo: target.to, deliverThreadId: target.threadId }),
  });
}
