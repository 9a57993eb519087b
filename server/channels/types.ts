// The channel plugin contract: target normalisation, one routing shape for both directions, delivery, inbound parsing.
import type { z } from 'zod';
import type { ChatDecision } from './approval-wire';

/** How a conversation is shaped on its platform; decides the session key form (CONTRACT §4). */
export type ChatType = 'direct' | 'group' | 'channel';

/** The conversation a message belongs to, as inbound routing sees it (ids as the platform spells them). */
export interface Peer {
  kind: ChatType;
  id: string;
}

/**
 * How a platform's threads scope sessions:
 * - `suffix`: the thread adds `:thread:<threadId>` to the conversation's key (Slack, Matrix, Mattermost, Teams…)
 * - `peer`: the thread is its own conversation id, so the peer already scopes it (Discord thread channels,
 *   Telegram forum topics `<chatId>:topic:<id>`)
 * - `none`: threads do not split sessions
 */
export type ThreadScoping = 'suffix' | 'peer' | 'none';

/** What a caller asks for: `send` params or `message` tool args, before normalisation. */
export interface OutboundTarget {
  to: string;
  accountId?: string;
  threadId?: string;
  replyTo?: string;
}

/** A target after the channel's rules: where to deliver, and the peer inbound would have seen. */
export interface ResolvedTarget {
  /** The delivery address in the platform's own spelling (channel id, chat id, room id…). */
  to: string;
  peer: Peer;
  /** The thread that scopes the session (only for `suffix` scoping; `peer` scoping folds it into the peer). */
  sessionThreadId?: string;
  /** The thread to deliver into (platform spelling), when any. */
  threadId?: string;
  replyTo?: string;
  accountId?: string;
}

/** One delivery: the resolved target plus the text; `attempt` lets adapters build per-try values. */
export interface DeliveryRequest {
  target: ResolvedTarget;
  text: string;
  /** A stable id for this send, usable as the platform's transaction or idempotency id. */
  idempotencyKey: string;
  signal?: AbortSignal;
}

export interface DeliveryResult {
  /** The platform's id for the posted message. */
  messageId: string;
}

/** What a parsed inbound request asks of the gateway. */
export interface InboundMessage {
  /** Sender id in the platform's spelling. */
  from: string;
  senderName?: string;
  peer: Peer;
  /** Thread that scopes the session (`suffix` scoping). */
  sessionThreadId?: string;
  text: string;
  accountId?: string;
  /** Platform message id (for logs and the transcript row's meta). */
  messageId?: string;
  /** A stable id for de-duplicating platform retries. */
  dedupeId?: string;
  /** Where replies of the run go: a target the same channel's delivery understands. */
  replyTarget: { to: string; threadId?: string; replyTo?: string };
}

export interface InboundResult {
  /** Messages to route to agents (may be empty: pings, bot echoes, verification handshakes). */
  messages: InboundMessage[];
  /** Presses of approval buttons (server/channels/approvals.ts decides them). */
  decisions?: ChatDecision[];
  /** The HTTP answer the platform expects (a challenge echo, a PONG…); default `{ok: true}`. */
  response?: { status?: number; body?: unknown };
}

/** The raw request as the inbound handler read it. */
export interface InboundRequest {
  headers: Headers;
  rawBody: string;
  url: URL;
  now: number;
}

export interface ChannelPlugin<C = Record<string, unknown>> {
  id: string;
  /** Human name for messages. */
  label: string;
  threadScoping: ThreadScoping;
  /** Validates `config.channels.<id>` (merged with `accounts.<accountId>`); delivery and inbound use it. */
  configSchema?: z.ZodType<C>;
  /**
   * Normalises a target to the peer inbound routing would produce; throws CrosstalkError `invalid_request`
   * for a target that cannot be routed.
   */
  resolveTarget(t: OutboundTarget): ResolvedTarget;
  /**
   * Delivers over the platform's API. Throws DeliveryFailure (see delivery.ts) on failure. Absent when the
   * platform's delivery is the transcript itself (webchat).
   */
  deliver?(cfg: C, req: DeliveryRequest): Promise<DeliveryResult>;
  /** The longest text one post takes (UTF-16 units): a longer message goes out in several posts (split-text.ts). */
  maxTextLength?: number;
  /** Checks authenticity (throws DeliveryFailure-free CrosstalkError `unauthorized`) and parses an inbound request. */
  inbound?(cfg: C, req: InboundRequest): Promise<InboundResult> | InboundResult;
  /**
   * When true, sessions of this channel always use the `per-channel-peer` form and no identity link
   * (voice: `agent:<id>:voice:direct:<phone>`).
   */
  pinnedDirectForm?: boolean;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyChannelPlugin = ChannelPlugin<any>;

/** What the message tool and reply routing record on a run started from a channel (`origin.channel`). */
export interface ChannelOrigin {
  id: string;
  to: string;
  threadId?: string;
  replyTo?: string;
  accountId?: string;
  from?: string;
  chatType?: ChatType;
  messageId?: string;
}
