// Reply routing: a run started by an inbound channel message delivers its posted replies back to that channel and thread.
import { z } from 'zod';
import { errorMessage, isCrosstalkError } from '../errors';
import type { EventBus } from '../events/bus';
import type { TranscriptMessage } from '../events/types';
import type { Logger } from '../logger';
import { appendTranscript } from '../orchestrator/transcript';
import { agentIdOf } from '../sessions/keys';
import type { Store } from '../store/store';
import { channelDelivery } from './channel-deliveries';
import { owedReplies, replyDeliveryId } from './owed-replies';
import type { AnyChannelPlugin, ChannelOrigin, Peer, ResolvedTarget } from './types';
import { SpanKind, type Telemetry } from '../telemetry/tracing';
import { failpoint } from '../failpoints';

const channelOriginSchema = z.object({
  id: z.string(),
  to: z.string(),
  threadId: z.string().optional(),
  replyTo: z.string().optional(),
  accountId: z.string().optional(),
  from: z.string().optional(),
  chatType: z.enum(['direct', 'group', 'channel']).optional(),
  /** The conversation as inbound saw it: a valid target even when `to` is not one the channel's parser takes. */
  peer: z.object({ kind: z.enum(['direct', 'group', 'channel']), id: z.string() }).optional(),
});

/** A run's channel origin, with the inbound message's peer (runs accepted before it was recorded have none). */
export type ReplyOrigin = ChannelOrigin & { peer?: Peer };

/**
 * Where a run's reply goes: the target the channel's rules make of the origin's `to` (as a `send` there would), or,
 * when its parser refuses it, the inbound peer itself. A generic-webhook sender whose id holds a space (`from:
 * "jo hn"`) was answered by nothing: `user:jo hn` is not a target `send` takes, and the reply failed before any
 * record was written. The peer the message came from is where its answer goes.
 */
export function replyTarget(plugin: AnyChannelPlugin, origin: ReplyOrigin): ResolvedTarget {
  try {
    return plugin.resolveTarget({ to: origin.to, threadId: origin.threadId, accountId: origin.accountId });
  } catch (e) {
    if (!origin.peer) throw e;
    return {
      to: origin.to,
      peer: origin.peer,
      ...(origin.threadId ? { threadId: origin.threadId, ...(plugin.threadScoping === 'suffix' ? { sessionThreadId: origin.threadId } : {}) } : {}),
      ...(origin.accountId ? { accountId: origin.accountId } : {}),
    };
  }
}

/**
 * The channel a run answers to, or null. A run whose origin names a calling session (`from`: a sub-agent,
 * sessions_send, a callback) answers that session, never a channel, even when the chain began on one.
 */
export function channelOriginOf(origin: unknown): ReplyOrigin | null {
  if (!origin || typeof origin !== 'object') return null;
  const o = origin as { channel?: unknown; from?: unknown };
  if (o.from) return null;
  const parsed = channelOriginSchema.safeParse(o.channel);
  return parsed.success ? parsed.data : null;
}

export interface ReplyRouter {
  stop(): void;
  idle(): Promise<void>;
  /** Entries held per run (tests check they are freed). */
  retained(): { origins: number; chains: number; traces: number };
  /**
   * Sends the replies a dead process owed (their rows committed, their records not written): on SQLite at start, on
   * PostgreSQL with the orphan sweep. Each is claimed by writing its record, so one process sends it. How many it sent.
   */
  sweepOwed(o: { graceMs: number; upTo?: number }): Promise<number>;
}

interface RouterDeps {
  store: Store;
  bus: EventBus;
  log: Logger;
  plugin(id: string): AnyChannelPlugin;
  deliver(channel: string, target: ResolvedTarget, text: string, o?: { idempotencyKey?: string; deliveryId?: string }): Promise<string>;
  /** This process in a cluster (PostgreSQL): a reply it leaves mid-call is closed by the orphan sweep. */
  owner(): string | undefined;
  deliveredBy(runId: string): Set<string> | undefined;
  forgetRun(runId: string): void;
  telemetry?: Telemetry;
}

export function startReplyRouting(d: RouterDeps): ReplyRouter {
  const origins = new Map<string, Promise<ReplyOrigin | null>>();
  // Each run's last queued reply (the run is forgotten once it is out).
  const chains = new Map<string, Promise<void>>();
  // One chain per session keeps a chat's replies in transcript order, across runs too: a run that ended while its reply
  // was still being recorded and sent was overtaken by the next run's (probe G: m18 reached Telegram before m13).
  // Sessions (chats) do not wait for each other.
  const tails = new Map<string, Promise<void>>();
  // The run's traceparent, from its start event: a reply's delivery is a span of the run's trace.
  const traces = new Map<string, string>();

  const originFor = (runId: string) => {
    let p = origins.get(runId);
    if (!p) {
      p = d.store.getRun(runId).then((row) => (row?.origin ? channelOriginOf(JSON.parse(row.origin)) : null));
      origins.set(runId, p);
    }
    return p;
  };

  /** Delivers a reply row to its run's channel with its record; whether this call delivered it. */
  async function deliverReply(m: TranscriptMessage): Promise<boolean> {
    const runId = m.runId!;
    const origin = await originFor(runId);
    if (!origin) return false;
    // A reply that cannot be routed (a channel no longer known, a target no rule takes) is a delivery too: recorded
    // `failed` with its error, where the board and deliveries.list show it (before: a log line, and nothing else).
    let plugin: AnyChannelPlugin;
    let target: ResolvedTarget;
    try {
      plugin = d.plugin(origin.id);
      if (!plugin.deliver) return false; // webchat: the transcript is the reply
      target = replyTarget(plugin, origin);
    } catch (e) {
      await unroutable(m, origin, e);
      return false;
    }
    const text = m.content.trim();
    const key = `${plugin.id}|${target.to.toLowerCase()}|${target.threadId ?? ''}|${text}`;
    // Text the run already sent there through the message tool is not delivered twice.
    if (d.deliveredBy(runId)?.has(key)) return false;
    const span = d.telemetry?.start(`channel reply ${plugin.id}`, traces.get(runId), { 'crosstalk.channel': plugin.id, 'crosstalk.run_id': runId }, { kind: SpanKind.PRODUCER });
    // A delivery with its record (CONTRACT §9 `channel`), one per reply row: its attempts, a `dead` end that
    // deliveries.retry sends again, and one cut off by a crash closed `failed` when the store opens again.
    const deliveryId = replyDeliveryId(m.id);
    const idempotencyKey = `reply-${m.id}`;
    try {
      const agentId = agentIdOf(m.sessionKey) ?? 'main';
      failpoint('reply.unrecorded'); // the reply's row committed, its record not written yet
      // Writing the record is the claim: a reply already recorded (sent by a sweep of owed replies, or another
      // process's) is not sent again.
      const made = await d.store.createDeliveries([channelDelivery(deliveryId, { agentId, channel: plugin.id, target, sessionKey: m.sessionKey, text: m.content, via: 'reply', runId, idempotencyKey, owner: d.owner() })]);
      if (!made.length) {
        d.telemetry?.end(span);
        return false;
      }
      const messageId = await d.deliver(plugin.id, target, m.content, { idempotencyKey, deliveryId });
      // The attempt that got through counts, as a send's does (its mirror row records it).
      await d.store.advanceDeliveries([deliveryId], 'delivered', { attempt: true, error: null });
      d.log.info({ runId, channel: plugin.id, to: target.to, messageId }, 'reply delivered');
      d.telemetry?.end(span);
      return true;
    } catch (e) {
      d.telemetry?.end(span, errorMessage(e));
      d.log.warn({ runId, channel: plugin.id, to: target.to, err: errorMessage(e) }, 'reply delivery failed');
      await notice(m, plugin.label, plugin.id, target.to, deliveryId, e);
    }
    return false;
  }

  /** The session's notice that a reply did not go out. */
  async function notice(m: TranscriptMessage, label: string, channel: string, to: string, deliveryId: string, e: unknown): Promise<void> {
    await appendTranscript(d.store, d.bus, [
      {
        sessionKey: m.sessionKey,
        role: 'system',
        kind: 'notice',
        content: `reply not delivered to ${label}: ${errorMessage(e)}`,
        runId: m.runId!,
        author: { type: 'system', id: 'channels' },
        meta: { channel, to, replyMessageId: m.id, deliveryId },
      },
    ]).catch(() => undefined);
  }

  /** A reply that could not be routed at all: its record, `failed` with the error (once: the record is the claim), and a notice. */
  async function unroutable(m: TranscriptMessage, origin: ReplyOrigin, e: unknown): Promise<void> {
    const runId = m.runId!;
    const deliveryId = replyDeliveryId(m.id);
    const target: ResolvedTarget = { to: origin.to, peer: origin.peer ?? { kind: origin.chatType ?? 'direct', id: origin.from ?? origin.to }, ...(origin.threadId ? { threadId: origin.threadId } : {}), ...(origin.accountId ? { accountId: origin.accountId } : {}) };
    d.log.warn({ runId, channel: origin.id, to: origin.to, err: errorMessage(e) }, 'reply could not be routed');
    const made = await d.store.createDeliveries([channelDelivery(deliveryId, { agentId: agentIdOf(m.sessionKey) ?? 'main', channel: origin.id, target, sessionKey: m.sessionKey, text: m.content, via: 'reply', runId, idempotencyKey: `reply-${m.id}` })]);
    if (!made.length) return;
    const error = { code: isCrosstalkError(e) ? e.code : 'channel_error', message: errorMessage(e) };
    await d.store.advanceDeliveries([deliveryId], 'failed', { error });
    await notice(m, origin.id, origin.id, origin.to, deliveryId, e);
  }

  // The end is the run's last event: forget it once its queued replies are out.
  const forget = (runId: string) => {
    const chain = chains.get(runId) ?? Promise.resolve();
    void chain.then(() => {
      chains.delete(runId);
      origins.delete(runId);
      traces.delete(runId);
      d.forgetRun(runId);
    });
  };
  // A run this process stops driving without an end event here (fenced after a takeover, dropped at a stop).
  const offGone = d.bus.onRunGone(forget);

  const off = d.bus.onEvent((ev) => {
    if (ev.stream === 'lifecycle' && ev.data.phase === 'start') {
      // The start event carries the run's origin: no store lookup for the run's replies (a resumed run falls back to one).
      const origin = ev.data.origin as Record<string, unknown> | undefined;
      origins.set(ev.runId, Promise.resolve(origin ? channelOriginOf(origin) : null));
      if (typeof ev.data.traceparent === 'string') traces.set(ev.runId, ev.data.traceparent);
      return;
    }
    if (ev.stream === 'lifecycle' && (ev.data.phase === 'end' || ev.data.phase === 'error')) {
      forget(ev.runId);
      return;
    }
    if (ev.stream !== 'message') return;
    const m = ev.data.message as TranscriptMessage | undefined;
    if (!m || m.role !== 'assistant' || m.kind !== 'message' || !m.runId || !m.content.trim()) return;
    const prev = tails.get(m.sessionKey) ?? Promise.resolve();
    const next = prev.then(async () => void (await deliverReply(m))).catch((e) => d.log.error({ err: e }, 'reply routing failed'));
    chains.set(m.runId, next);
    tails.set(m.sessionKey, next);
    void next.then(() => {
      if (tails.get(m.sessionKey) === next) tails.delete(m.sessionKey);
    });
  });

  return {
    stop() {
      off();
      offGone();
    },
    async idle() {
      await Promise.all([...chains.values()]);
      await new Promise((r) => setImmediate(r));
    },
    retained: () => ({ origins: origins.size, chains: chains.size + tails.size, traces: traces.size }),
    async sweepOwed(o) {
      const isChannelRun = (origin: unknown) => {
        const o = channelOriginOf(origin);
        if (!o) return false;
        try {
          return !!d.plugin(o.id).deliver;
        } catch {
          return false; // a channel no longer configured
        }
      };
      const owed = await owedReplies(d.store, isChannelRun, o);
      let sent = 0;
      for (const m of owed) {
        d.log.warn({ runId: m.runId, messageId: m.id, sessionKey: m.sessionKey }, 'a reply the process that wrote it did not deliver (it stopped first): delivering it now');
        if (await deliverReply(m)) sent++;
      }
      // The runs' origins were looked up for these replies only: not kept.
      for (const m of owed) if (!chains.has(m.runId!)) origins.delete(m.runId!);
      return sent;
    },
  };
}
