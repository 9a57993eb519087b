// Channel sends as deliveries (CONTRACT §9 `channel`): the record of a `message`/`send`, its attempts, and what a retry re-sends.
import { CrosstalkError, isCrosstalkError } from '../errors';
import { getDeliveryRow, type NewDelivery } from '../store/deliveries';
import type { Store } from '../store/store';
import { DeliveryFailure } from './delivery';
import type { Peer, ResolvedTarget } from './types';

/** What a retry needs to send the same message again (kept in the delivery's `source`). */
export interface ChannelSendSource {
  agentId: string;
  channel: string;
  to: string;
  text: string;
  /** `reply`: a run's answer to the channel message that started it (reply-router.ts), never mirrored. */
  via: 'send' | 'message' | 'reply';
  sessionKey?: string;
  threadId?: string;
  replyTo?: string;
  accountId?: string;
  runId?: string;
  sourceSessionKey?: string;
  /** The platform idempotency key of a keyed `send` (`send-<key>`): a retry sends under it again. */
  idempotencyKey?: string;
  /** The cluster process sending it (PostgreSQL): one that dies mid-send leaves it to `closeOrphanedSends`. */
  owner?: string;
  /** A text sent in several posts (split-text.ts): how many of them got through, so a retry sends only the rest. */
  sentParts?: number;
  /** A reply's conversation as inbound saw it: a retry sends there when `to` is not a target the channel's parser takes. */
  peer?: Peer;
}

export function channelDelivery(
  id: string,
  o: { agentId: string; channel: string; target: ResolvedTarget; sessionKey: string; text: string; via: 'send' | 'message' | 'reply'; runId?: string; sourceSessionKey?: string; callId?: string; owner?: string; idempotencyKey?: string },
): NewDelivery {
  const src: ChannelSendSource = {
    agentId: o.agentId,
    channel: o.channel,
    to: o.target.to,
    text: o.text,
    via: o.via,
    sessionKey: o.sessionKey,
    ...(o.target.threadId ? { threadId: o.target.threadId } : {}),
    ...(o.target.replyTo ? { replyTo: o.target.replyTo } : {}),
    ...(o.target.accountId ? { accountId: o.target.accountId } : {}),
    ...(o.runId ? { runId: o.runId } : {}),
    ...(o.sourceSessionKey ? { sourceSessionKey: o.sourceSessionKey } : {}),
    ...(o.idempotencyKey ? { idempotencyKey: o.idempotencyKey } : {}),
    ...(o.owner ? { owner: o.owner } : {}),
    ...(o.via === 'reply' ? { peer: o.target.peer } : {}),
  };
  return {
    id,
    kind: 'channel',
    // From the sending session (a `message` call), or the session it is mirrored into (a `send`, which has no sender).
    from: { sessionKey: o.sourceSessionKey ?? o.sessionKey, runId: o.runId ?? null, callId: o.callId ?? null },
    to: { sessionKey: o.sessionKey, channel: o.channel, target: o.target.to },
    source: `channel:${JSON.stringify(src)}`,
  };
}

export function parseChannelSource(source: string | null): ChannelSendSource | null {
  if (!source?.startsWith('channel:')) return null;
  try {
    return JSON.parse(source.slice('channel:'.length)) as ChannelSendSource;
  } catch {
    return null;
  }
}

/**
 * Wraps one platform call: every failed attempt counts on the delivery; `end` records how the send ended when it
 * gave up: `dead` when its retries ran out on failures worth retrying (429, 5xx, the network), else `failed`.
 */
export function countedAttempt<T>(store: Store, id: string, fn: () => Promise<T>) {
  let last: unknown;
  let elsewhere = false;
  return {
    run: async (attempt = 1) => {
      // Before each retry: a record no longer `accepted` was settled by someone else meanwhile — the repeat of its key
      // on another process delivered it, or this process was found dead (paused past its lease) and the sweep closed
      // it. Sending again would reach the platform twice.
      if (attempt > 1 && (await getDeliveryRow(store.db, id))?.state !== 'accepted') {
        elsewhere = true;
        throw new CrosstalkError('channel_error', `delivery ${id} was settled elsewhere while this send waited to retry; not sent again`);
      }
      try {
        return await fn();
      } catch (e) {
        last = e;
        await store.markAttempt(id, { ok: false, final: false, error: { code: 'channel_error', message: (e as Error).message } }).catch(() => undefined);
        throw e;
      }
    },
    async end(e: unknown) {
      if (elsewhere) return; // its record says what happened elsewhere
      const f = last instanceof DeliveryFailure ? last : null;
      const retryable = !!f && (f.kind === 'rate_limited' || f.kind === 'server' || f.kind === 'network');
      const error = { code: isCrosstalkError(e) ? e.code : 'channel_error', message: (e as Error).message };
      await store.advanceDeliveries([id], retryable ? 'dead' : 'failed', { error }).catch(() => undefined);
    },
  };
}

/** A keyed `send`'s record (its id derives from the key): a repeat of the key sends it again, so no sweep closes it. */
export const isKeyedSend = (id: string) => id.startsWith('dlv_send_');

/**
 * Channel sends left `accepted` by a process that died during the platform call (CONTRACT §9: nothing else would
 * ever move them): closed `failed` with `interrupted`, since the platform may have it and nothing sends it again (a
 * re-driven `message` call answers `interrupted`; an unkeyed `send`'s client got no answer). `alive` lists the
 * cluster's living processes (read only when there is a send to look at); without it (SQLite, at start) every
 * sender is gone. A keyed send is left to its key's repeat, and one recorded without its process is left as it is.
 */
export async function closeOrphanedSends(store: Store, alive?: () => Promise<Set<string>>): Promise<number> {
  const rows = await store.db.selectFrom('deliveries').select(['id', 'source']).where('state', '=', 'accepted').where('kind', '=', 'channel').execute();
  const open = rows.filter((r) => !isKeyedSend(r.id)).map((r) => ({ id: r.id, owner: parseChannelSource(r.source)?.owner }));
  if (!open.length) return 0;
  const living = alive ? await alive() : undefined;
  const ids = open.filter((r) => !living || (r.owner !== undefined && !living.has(r.owner))).map((r) => r.id);
  if (!ids.length) return 0;
  const error = { code: 'interrupted', message: 'the process sending it stopped during the call; it may have reached the channel, and it is not sent again' };
  return (await store.advanceDeliveries(ids, 'failed', { error })).length;
}
