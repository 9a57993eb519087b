// Channel sends as deliveries (CONTRACT §9 `channel`): the record of a `message`/`send`/reply, its attempts, what a retry
// re-sends, and what becomes of one whose process died (sent again when no call of it was out, else closed).
import { CrosstalkError, errorMessage, isCrosstalkError } from '../errors';
import type { NewDelivery } from '../store/deliveries';
import type { ExpressionBuilder, UpdateObject } from 'kysely';
import type { Database, DeliveryRow } from '../store/schema';
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
  /**
   * Where its attempts stand, for the process that takes it over when its own dies: `ready` — no platform call of it is
   * out (none made yet, or it waits to retry until `not_before`), so it is sent again, nothing doubles; `calling` — a
   * call is out (counted in `attempts` as it began): it may have reached the channel, and is closed `interrupted`;
   * `answered` — the call got its 2xx and the record was about to say so (its count is left to that write). A record
   * written before this was kept has none: taken as `calling`.
   */
  phase?: 'ready' | 'calling' | 'answered';
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
    phase: 'ready',
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

const sourceText = (src: ChannelSendSource) => `channel:${JSON.stringify(src)}`;

/**
 * One send's record while this process sends it: each attempt is counted and marked `calling` as it begins (an attempt
 * lost with its process counts), marked `ready` with its `not_before` while it waits to retry, and a send that gives up
 * ends it: `dead` when its retries ran out on failures worth retrying (429, 5xx, the network), else `failed`. Every
 * write is a compare-and-set on the record's `source` as this process last wrote it: a record settled elsewhere
 * meanwhile (the key's repeat on another process, the sweep that found this process dead), or taken over by another
 * process, is not sent again from here — that would reach the platform twice.
 */
export class SendRecord {
  private last: unknown;
  private elsewhere = false;

  private constructor(
    private readonly store: Store,
    readonly id: string,
    private text: string,
    private src: ChannelSendSource,
    private readonly row: DeliveryRow,
    private readonly owner: string | undefined,
  ) {}

  /** The record, when it is `accepted` with a send (else the send goes out untracked: its record says what happened). */
  static async load(store: Store, id: string, owner?: string): Promise<SendRecord | null> {
    const row = await store.db.selectFrom('deliveries').selectAll().where('id', '=', id).executeTakeFirst();
    const src = row?.state === 'accepted' ? parseChannelSource(row.source) : null;
    return row && src ? new SendRecord(store, id, row.source!, src, row, owner) : null;
  }

  /** The parts of a text sent in several posts that got through already. */
  get sentParts(): number {
    return this.src.sentParts ?? 0;
  }

  /** The attempt number a round taken over goes on from: the attempts its round has counted, plus one. */
  get resumeAt(): number {
    return Number(this.row.attempts) - Number(this.row.round_from ?? 0) + 1;
  }

  /** Wraps the platform call: the attempt (number `n` of its round; 1 begins a round) is counted before it goes. */
  attempt<T>(fn: () => Promise<T>): (n: number) => Promise<T> {
    return async (n) => {
      await this.begin(n === 1);
      try {
        return await fn();
      } catch (e) {
        this.last = e;
        throw e;
      }
    };
  }

  private async begin(newRound: boolean) {
    // A 2xx whose record its process never wrote (it died in between): that attempt counts too.
    const lost = this.src.phase === 'answered' ? 1 : 0;
    const ok = await this.write({ ...this.src, phase: 'calling', ...(this.owner ? { owner: this.owner } : {}) }, (eb) => ({
      attempts: eb('attempts', '+', 1 + lost),
      not_before: null,
      ...(newRound ? { round_from: eb('attempts', '+', lost) } : {}),
    })).catch((e: unknown) => {
      throw new CrosstalkError('channel_error', `delivery ${this.id}: could not record its attempt: ${errorMessage(e)}`);
    });
    if (!ok) {
      this.elsewhere = true;
      throw new CrosstalkError('channel_error', `delivery ${this.id} was settled or taken over elsewhere before this attempt; not sent again`);
    }
  }

  /** A failed attempt that is retried in `ms`: no call is out until then (a process taking it over sends it, at that time). */
  async waiting(f: DeliveryFailure, ms: number): Promise<void> {
    const ok = await this.write({ ...this.src, phase: 'ready' }, () => ({ error_code: 'channel_error', error_message: f.message, not_before: new Date(Date.now() + ms).toISOString() }));
    if (!ok) {
      this.elsewhere = true;
      throw new CrosstalkError('channel_error', `delivery ${this.id} was settled elsewhere while its call was out; not sent again`);
    }
  }

  /**
   * The call got its 2xx. Its count is withdrawn here: the write that records it (the mirror row, a reply's
   * `delivered`) counts it. A part of several that is not the last: how many got through, so a retry sends the rest.
   */
  async answered(part: number, last: boolean): Promise<void> {
    const next: ChannelSendSource = last ? { ...this.src, phase: 'answered' } : { ...this.src, phase: 'ready', sentParts: part + 1 };
    await this.write(next, (eb) => ({ attempts: eb('attempts', '-', 1) })).catch(() => false);
  }

  /** The send gave up: the record ends (unless it was settled elsewhere, whose record says what happened). */
  async end(e: unknown): Promise<void> {
    if (this.elsewhere) return;
    const f = this.last instanceof DeliveryFailure ? this.last : null;
    const retryable = !!f && (f.kind === 'rate_limited' || f.kind === 'server' || f.kind === 'network');
    const error = { code: isCrosstalkError(e) ? e.code : 'channel_error', message: (e as Error).message };
    await this.store.advanceDeliveries([this.id], retryable ? 'dead' : 'failed', { error }).catch(() => undefined);
  }

  private async write(next: ChannelSendSource, set: (eb: ExpressionBuilder<Database, 'deliveries'>) => UpdateObject<Database, 'deliveries'>): Promise<boolean> {
    const text = sourceText(next);
    const r = await this.store.db
      .updateTable('deliveries')
      .set((eb) => ({ ...set(eb), source: text, updated_at: new Date().toISOString() }))
      .where('id', '=', this.id)
      .where('state', '=', 'accepted')
      .where('source', '=', this.text)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) return false;
    this.text = text;
    this.src = next;
    return true;
  }
}

/** A keyed `send`'s record (its id derives from the key): a repeat of the key sends it again, so no sweep closes it. */
export const isKeyedSend = (id: string) => id.startsWith('dlv_send_');

/**
 * Channel sends left `accepted` by a process that died (CONTRACT §9: nothing else would ever move them). One with no
 * call out (`ready`: it died before the first, or while it waited to retry) is taken over and `resume`d: sent again
 * once its `not_before` has passed, its round going on (no call of it was out, so nothing doubles). One that died
 * during the platform call is closed `failed` with `interrupted`, since the platform may have it and nothing sends it
 * again (a re-driven `message` call answers `interrupted`; an unkeyed `send`'s client got no answer). `alive` lists the
 * cluster's living processes (read only when there is a send to look at); without it (SQLite, at start) every sender
 * is gone. A keyed send is left to its key's repeat, and one recorded without its process is left as it is. `me`:
 * this process (the owner a send taken over gets). How many it closed or took over.
 */
export async function closeOrphanedSends(store: Store, o: { alive?: () => Promise<Set<string>>; me?: string; resume: (row: DeliveryRow) => void }): Promise<number> {
  const rows = await store.db.selectFrom('deliveries').selectAll().where('state', '=', 'accepted').where('kind', '=', 'channel').execute();
  const open = rows.filter((r) => !isKeyedSend(r.id)).map((row) => ({ row, src: parseChannelSource(row.source) }));
  if (!open.length) return 0;
  const living = o.alive ? await o.alive() : undefined;
  const orphans = open.filter((r) => !living || (r.src?.owner !== undefined && !living.has(r.src.owner)));
  const cut: string[] = [];
  const answered: string[] = [];
  let resumed = 0;
  for (const { row, src } of orphans) {
    if (src?.phase === 'ready') {
      // The claim: one process takes it over (compare-and-set on its source, which names its new owner).
      const text = sourceText({ ...src, ...(o.me ? { owner: o.me } : {}) });
      const won = await store.db.updateTable('deliveries').set({ source: text }).where('id', '=', row.id).where('state', '=', 'accepted').where('source', '=', row.source).executeTakeFirst();
      if (Number(won.numUpdatedRows) !== 1) continue;
      resumed++;
      o.resume({ ...row, source: text });
    } else if (src?.phase === 'answered') answered.push(row.id);
    else cut.push(row.id);
  }
  const error = { code: 'interrupted', message: 'the process sending it stopped during the call; it may have reached the channel, and it is not sent again' };
  const closed = (await store.advanceDeliveries(cut, 'failed', { error })).length + (await store.advanceDeliveries(answered, 'failed', { error, attempt: 1 })).length;
  return closed + resumed;
}
