// The channel service: `send` (CONTRACT §3), the message tool's delivery, mirroring into the target's session, inbound and reply routing.
import crypto from 'node:crypto';
import { z } from 'zod';
import type { CrosstalkConfig } from '../config';
import { CrosstalkError, isCrosstalkError } from '../errors';
import type { EventBus } from '../events/bus';
import { sendParams, type SendParams } from '../gateway/schemas';
import type { Logger } from '../logger';
import type { Orchestrator } from '../orchestrator/orchestrator';
import { appendTranscript } from '../orchestrator/transcript';
import { agentIdOf, sessionKindOf } from '../sessions/keys';
import type { Store } from '../store/store';
import { resolveChannelConfig, withDeliveryRetry, type RetrySettings } from './delivery';
import { splitText } from './split-text';
import { channelDelivery, type ChannelSendSource, closeOrphanedSends, isKeyedSend, parseChannelSource, SendRecord } from './channel-deliveries';
import { getDeliveryRow, newDeliveryId } from '../store/deliveries';
import type { DeliveryRow } from '../store/schema';
import { startChatApprovals, type ChatApprovals } from './approvals';
import { handleInbound, type InboundOutcome, submitInbound } from './inbound';
import { claimHeld, listPairings, type PairingInfo, pairingsResolveParams, type PairingsResolveParams, resolvePairing } from '../trust/pairing';
import { createChannelRegistry } from './registry';
import { Claimant, dropClaim, insertClaim, settleClaim, stillPending, takeOverClaim } from '../store/idempotency';
import { failpoint } from '../failpoints';
import { replyTarget, startReplyRouting, type ReplyRouter } from './reply-router';
import { ensureOutboundSessionEntry, resolveOutboundSessionRoute, sessionMeta, type SessionRoute } from './routing';
import type { AnyChannelPlugin, InboundRequest, ResolvedTarget } from './types';

// `send`'s params are a contract shape (gateway/schemas.ts); re-exported for the channel code that names them here.
export { sendParams, type SendParams } from '../gateway/schemas';

export interface SendResult {
  messageId: string;
  sessionKey: string;
}

/** What the message tool asks for: an agent's send, mirrored into the target's session for that agent. */
export interface AgentSend {
  agentId: string;
  channel: string;
  to: string;
  text: string;
  threadId?: string;
  replyTo?: string;
  accountId?: string;
  /** The run that sent it (recorded on the mirror row) and its session (recorded in meta, never mirrored into). */
  runId?: string;
  sourceSessionKey?: string;
  /** Its delivery record's id (CONTRACT §9), derived from the `message` call that sends it, and that call. */
  deliveryId?: string;
  callId?: string;
  signal?: AbortSignal;
}

export interface ChannelDeps {
  config: CrosstalkConfig;
  store: Store;
  bus: EventBus;
  orchestrator: Orchestrator;
  log: Logger;
  /** Channel replies join their run's trace (a span per reply delivery). */
  telemetry?: import('../telemetry/tracing').Telemetry;
}

export interface ChannelService {
  readonly plugins: ReadonlyMap<string, AnyChannelPlugin>;
  /** JSON-RPC `send`: channel delivery with no agent run, mirrored into `sessionKey` or the derived target session. */
  send(params: SendParams): Promise<SendResult>;
  /** The message tool's send: delivery plus a mirror into the target's session (never the sender's). */
  sendFromAgent(s: AgentSend): Promise<SendResult & { channel: string; to: string; threadId?: string; deliveryId?: string }>;
  /** The route a target would take for an agent (no side effects). */
  resolveRoute(o: { agentId: string; channel: string; to: string; threadId?: string; replyTo?: string; accountId?: string }): { route: SessionRoute; target: ResolvedTarget };
  /** Delivers text to a resolved target with the retry policy (no mirror); `channel_error` on failure. */
  deliver(channel: string, target: ResolvedTarget, text: string, o?: { idempotencyKey?: string; signal?: AbortSignal }): Promise<string>;
  /** An inbound platform request: verified, parsed, routed, submitted. */
  handleInbound(channel: string, req: InboundRequest): Promise<InboundOutcome>;
  /** Texts a run already delivered through the message tool, per target (final replies are not delivered twice). */
  deliveredBy(runId: string): Set<string>;
  /** Pending pairing requests (CONTRACT §3 `pairings.list`). */
  pairingsList(): Promise<{ pairings: PairingInfo[] }>;
  /** Approves (the held messages run, in order) or denies a pairing request (CONTRACT §3 `pairings.resolve`). */
  pairingsResolve(p: PairingsResolveParams): Promise<{ status: 'ok' }>;
  /**
   * Closes channel sends a dead process left `accepted` (CONTRACT §9): on SQLite at start (all of them: this is the
   * store's only process), on PostgreSQL with the cluster's orphan sweep (those whose process is not alive). Never
   * rejects (a failed pass is logged); a call during a pass gets that pass.
   */
  closeOrphanedSends(): Promise<number>;
  /**
   * Sends the replies a dead process owed (their rows committed, their records never written): on SQLite at start
   * (`upTo`: the rows there before this process started), on PostgreSQL when a process is found dead (`graceMs`:
   * rows that young may be a live process's, its router about to record them). Never rejects; how many it sent.
   */
  sendOwedReplies(o: { graceMs: number; upTo?: number }): Promise<number>;
  /** Starts reply routing (a bus listener). */
  start(): void;
  stop(): void;
  /** Resolves when queued reply deliveries are done (tests, shutdown). */
  idle(): Promise<void>;
  /** In-memory entries kept per run or approval (tests check they are freed when the run leaves this process). */
  retained(): { origins: number; chains: number; traces: number; delivered: number; approvalPosts: number };
}

/** The key under which a delivered text is remembered per run. */
export const deliveryKey = (channel: string, to: string, threadId: string | undefined, text: string) => `${channel}|${to.toLowerCase()}|${threadId ?? ''}|${text.trim()}`;

export function createChannels(deps: ChannelDeps): ChannelService {
  const { config, store, bus, orchestrator, log } = deps;
  const plugins = createChannelRegistry();
  const inflight = new Map<string, Promise<SendResult>>();
  /** The pass of `closeOrphanedSends` under way. */
  let closing: Promise<number> | null = null;
  const delivered = new Map<string, Set<string>>();
  let router: ReplyRouter | null = null;
  let chatApprovals: ChatApprovals | null = null;

  const plugin = (id: string): AnyChannelPlugin => {
    const p = plugins.get(id.toLowerCase());
    if (!p) throw new CrosstalkError('unknown_channel', `unknown channel ${id}; known: ${[...plugins.keys()].join(', ')}`);
    return p;
  };

  const agentName = (agentId: string) => orchestrator.agent(agentId)?.name ?? agentId;

  function resolveRoute(o: { agentId: string; channel: string; to: string; threadId?: string; replyTo?: string; accountId?: string }) {
    return resolveOutboundSessionRoute(plugin(o.channel), { to: o.to, threadId: o.threadId, replyTo: o.replyTo, accountId: o.accountId }, { agentId: o.agentId, session: config.session });
  }

  /** Where a dead send goes again: its `to` under the channel's rules, or a reply's inbound peer when they refuse it (reply-router.ts). */
  function retryRoute(send: ChannelSendSource): { route: SessionRoute; target: ResolvedTarget } {
    const t = { to: send.to, threadId: send.threadId, replyTo: send.replyTo, accountId: send.accountId };
    try {
      return resolveRoute({ agentId: send.agentId, channel: send.channel, ...t });
    } catch (e) {
      if (!send.peer) throw e;
      const p = plugin(send.channel);
      const target: ResolvedTarget = { ...replyTarget(p, { id: p.id, ...t, peer: send.peer }), ...(send.replyTo ? { replyTo: send.replyTo } : {}) };
      return resolveOutboundSessionRoute(p, target, { agentId: send.agentId, session: config.session });
    }
  }

  async function deliver(channel: string, target: ResolvedTarget, text: string, o: { idempotencyKey?: string; signal?: AbortSignal; deliveryId?: string; resume?: boolean } = {}): Promise<string> {
    const p = plugin(channel);
    // A delivery's every attempt, a retry of it after it went dead included (deliveries.retry), carries one key: a
    // receiver that kept an attempt it then failed to acknowledge knows the retry for the same message.
    const idempotencyKey = o.idempotencyKey ?? `ct-${o.deliveryId ?? crypto.randomUUID()}`;
    if (!p.deliver) return `${p.id}:${idempotencyKey}`; // webchat: the transcript is the delivery
    let cfg: unknown;
    // Longer than one post takes: several posts, in order, each retried on its own (the first's id answers for them).
    const parts = p.maxTextLength ? splitText(text, p.maxTextLength) : [text];
    // With a record (CONTRACT §9): each attempt is counted on it as it begins, the wait before a retry is written to it,
    // and a send that gives up ends it — one to a channel that is not configured included. It keeps the parts that
    // got through, so a retry after the send died part-way sends the rest: no part reaches the chat twice.
    const record = o.deliveryId ? await SendRecord.load(store, o.deliveryId, orchestrator.cluster?.id || undefined) : null;
    // A send taken over from a process that died goes on with its round where it stopped.
    let resume = !!o.resume;
    let first: string | undefined;
    for (const [i, part] of parts.entries()) {
      if (i < (record?.sentParts ?? 0)) continue;
      const key = i === 0 ? idempotencyKey : `${idempotencyKey}-${i + 1}`;
      const send = () => p.deliver!(cfg as never, { target, text: part, idempotencyKey: key, signal: o.signal });
      try {
        cfg ??= p.configSchema ? resolveChannelConfig(config.channels, p.id, p.configSchema, target.accountId) : (config.channels[p.id] ?? {});
        const c = cfg as Partial<RetrySettings>;
        const settings: RetrySettings = { maxAttempts: c.maxAttempts ?? 3, maxRetryAfterMs: c.maxRetryAfterMs ?? 30_000, retryBaseMs: c.retryBaseMs ?? 500 };
        const from = resume && record ? Math.max(1, Math.min(record.resumeAt, settings.maxAttempts)) : 1;
        resume = false;
        const res = record
          ? await withDeliveryRetry(p.label, settings, record.attempt(send), o.signal, { first: from, beforeWait: (f, ms) => record.waiting(f, ms) })
          : await withDeliveryRetry(p.label, settings, send, o.signal);
        first ??= res.messageId;
        await record?.answered(i, i === parts.length - 1);
      } catch (e) {
        await record?.end(e);
        throw e;
      }
    }
    return first!;
  }

  /** Deliver first; only a delivered message is mirrored (and only then is a missing session created). */
  async function deliverAndMirror(o: {
    agentId: string;
    channel: string;
    route: SessionRoute;
    target: ResolvedTarget;
    sessionKey: string;
    text: string;
    via: 'send' | 'message';
    runId?: string;
    sourceSessionKey?: string;
    idempotencyKey?: string;
    signal?: AbortSignal;
    deliveryId?: string;
    callId?: string;
    resume?: boolean;
  }): Promise<string> {
    // The send's record (CONTRACT §9 `channel`), kept with what a retry needs to send it again.
    if (o.deliveryId) await store.createDeliveries([channelDelivery(o.deliveryId, { ...o, owner: orchestrator.cluster?.id || undefined })]);
    // A failed send names its record (the `message` tool's failure carries it, as its success does, CONTRACT §9): it
    // is there, dead or failed, and may be retried.
    const messageId = await deliver(o.channel, o.target, o.text, { idempotencyKey: o.idempotencyKey, signal: o.signal, deliveryId: o.deliveryId, resume: o.resume }).catch((e: unknown) => {
      if (o.deliveryId && isCrosstalkError(e)) e.deliveryId = o.deliveryId;
      throw e;
    });
    // Settled elsewhere while the call was out (the key's repeat on another process mirrored it, or this process was
    // found dead and its send closed): the platform has it, and what crosstalk records of it is there already.
    if (o.deliveryId && (await getDeliveryRow(store.db, o.deliveryId))?.state !== 'accepted') return messageId;
    if (o.sessionKey === o.route.sessionKey) await ensureOutboundSessionEntry(store, o.route, o.target);
    else {
      await store.ensureSession({
        key: o.sessionKey,
        agentId: o.agentId,
        kind: sessionKindOf(o.sessionKey),
        meta: sessionMeta(o.route, { from: o.target.peer.id, deliverTo: o.target.to, deliverThreadId: o.target.threadId }),
      });
    }
    await appendTranscript(store, bus, [
      {
        sessionKey: o.sessionKey,
        role: 'assistant',
        kind: 'mirror',
        content: o.text,
        // The row carries the sending run's id, but its event goes to the target session's stream (no runId passed).
        ...(o.runId ? { runId: o.runId } : {}),
        author: { type: 'agent', id: o.agentId, name: agentName(o.agentId) },
        meta: {
          via: o.via,
          channel: o.channel,
          to: o.target.to,
          messageId,
          ...(o.target.threadId ? { threadId: o.target.threadId } : {}),
          ...(o.target.replyTo ? { replyTo: o.target.replyTo } : {}),
          ...(o.target.accountId ? { accountId: o.target.accountId } : {}),
          ...(o.sourceSessionKey ? { sourceSessionKey: o.sourceSessionKey } : {}),
          // The mirror row records the 2xx: its delivery is `delivered` in the same transaction.
          ...(o.deliveryId ? { deliveryId: o.deliveryId } : {}),
        },
      },
    ]);
    return messageId;
  }

  // A dead channel delivery retried (deliveries.retry): sent again as first asked, under the same id.
  store.deliveryRetry.set('channel', async (row) => {
    const send = parseChannelSource(row.source);
    if (!send) throw new CrosstalkError('not_retryable', `delivery ${row.id} keeps no send to retry`);
    // A keyed send whose key was sent again by a repeat (a record of its own, `<id>_<suffix>`): the message went out
    // under that one, so this one is closed, not sent a second time.
    if (isKeyedSend(row.id)) {
      const again = await store.db.selectFrom('deliveries').select(['id', 'state']).where('id', 'like', `${row.id}_%`).where('state', 'in', ['accepted', 'delivered']).orderBy('created_at', 'desc').executeTakeFirst();
      if (again) {
        const error = { code: 'not_retryable', message: `a repeat of its idempotency key sent the message again as delivery ${again.id}` };
        await store.advanceDeliveries([row.id], 'failed', { error });
        throw new CrosstalkError('not_retryable', `delivery ${row.id}: ${error.message}`);
      }
    }
    const { route, target } = retryRoute(send);
    // This process sends it now, no call of it out yet: if it dies, the process that takes over sends it (not while
    // it lives). A record settled meanwhile (the sweep found its last sender dead) is not sent.
    const owner = orchestrator.cluster?.id || undefined;
    const claimed = await store.db
      .updateTable('deliveries')
      .set({ source: `channel:${JSON.stringify({ ...send, phase: 'ready', ...(owner ? { owner } : {}) } satisfies ChannelSendSource)}` })
      .where('id', '=', row.id)
      .where('state', '=', 'accepted')
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1) throw new CrosstalkError('not_retryable', `delivery ${row.id} was settled meanwhile`);
    void sendAgain(row.id, send, route, target, false).catch((e) => log.warn({ err: (e as Error).message, deliveryId: row.id }, 'channel delivery retry failed'));
  });

  /** A recorded send sent again, under its id: retried (deliveries.retry), or `resume`d from a process that died. */
  async function sendAgain(id: string, send: ChannelSendSource, route: SessionRoute, target: ResolvedTarget, resume: boolean): Promise<void> {
    // A run's reply: its row is in the transcript already; sent again, it is not mirrored.
    if (send.via === 'reply') {
      await deliver(route.channel, target, send.text, { idempotencyKey: send.idempotencyKey, deliveryId: id, resume });
      await store.advanceDeliveries([id], 'delivered', { attempt: true, error: null });
      return;
    }
    await deliverAndMirror({ agentId: send.agentId, channel: route.channel, route, target, sessionKey: send.sessionKey ?? route.sessionKey, text: send.text, via: send.via, ...(send.idempotencyKey ? { idempotencyKey: send.idempotencyKey } : {}), ...(send.runId ? { runId: send.runId } : {}), ...(send.sourceSessionKey ? { sourceSessionKey: send.sourceSessionKey } : {}), deliveryId: id, resume });
  }

  /**
   * A send taken over from a process that died while no call of it was out (closeOrphanedSends): sent once its wait
   * is over (`not_before`, a 429's Retry-After or the backoff), its round going on; one that can no longer be routed
   * ends `failed`.
   */
  async function resumeSend(row: DeliveryRow): Promise<void> {
    const send = parseChannelSource(row.source)!;
    log.warn({ deliveryId: row.id, channel: send.channel }, 'a channel send whose process stopped while it waited: sending it now');
    let routed: ReturnType<typeof retryRoute>;
    try {
      routed = retryRoute(send);
    } catch (e) {
      await store.advanceDeliveries([row.id], 'failed', { error: { code: isCrosstalkError(e) ? e.code : 'channel_error', message: (e as Error).message } });
      return;
    }
    const wait = row.not_before ? Date.parse(row.not_before) - Date.now() : 0;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait).unref());
    await sendAgain(row.id, send, routed.route, routed.target, true);
  }

  async function sendOnce(p: z.output<typeof sendParams>, freshKey = false): Promise<SendResult> {
    const pl = plugin(p.channel);
    let agentId = config.defaultAgentId;
    if (p.sessionKey) {
      const id = agentIdOf(p.sessionKey);
      if (!id || !orchestrator.agent(id)) throw new CrosstalkError('unknown_agent', `unknown agent in session key ${p.sessionKey}`);
      agentId = id;
    }
    const { route, target } = resolveOutboundSessionRoute(pl, { to: p.to, threadId: p.threadId, replyTo: p.replyTo, accountId: p.accountId }, { agentId, session: config.session });
    const sessionKey = p.sessionKey ?? route.sessionKey;
    let deliveryId = p.idempotencyKey ? `dlv_send_${crypto.createHash('sha256').update(p.idempotencyKey).digest('hex').slice(0, 32)}` : newDeliveryId();
    // A key claimed afresh whose record exists (the key expired, or its first request was refused) is a new request:
    // a record of its own, not the old one (which is settled, and would keep this send from being mirrored).
    if (freshKey && (await getDeliveryRow(store.db, deliveryId))) deliveryId = `${deliveryId}_${crypto.randomBytes(6).toString('hex')}`;
    const messageId = await deliverAndMirror({ agentId, channel: pl.id, route, target, sessionKey, text: p.message, via: 'send', idempotencyKey: p.idempotencyKey ? `send-${p.idempotencyKey}` : undefined, deliveryId });
    return { messageId, sessionKey };
  }

  const claimant = new Claimant(store.db, () => orchestrator.cluster?.id || null);

  /**
   * `send` with an idempotency key: the key is claimed (pending, with its claimant) before the channel is called and
   * settled with the answer, so the channel API is reached once per key whichever processes get it. A repeat waits
   * for the answer; one whose claimant died before answering takes the claim over and delivers (under the same
   * platform idempotency key): at most once more, never while the claimant lives.
   */
  async function sendClaimed(p: z.output<typeof sendParams>, key: string): Promise<SendResult> {
    const me = claimant.me;
    for (let attempt = 0; attempt < 5; attempt++) {
      const seen = await claimant.await(key);
      if (seen.kind === 'done') return seen.result as SendResult;
      if (seen.kind === 'pending') throw stillPending(key);
      const held = seen.kind === 'orphaned' ? await takeOverClaim(store.db, key, seen.claim.owner ?? '', me) : await insertClaim(store.db, { key, owner: me });
      if (!held) continue; // another request took it first: its answer
      failpoint('send.claimed');
      let res: SendResult;
      try {
        res = await sendOnce(p, seen.kind !== 'orphaned');
      } catch (e) {
        await dropClaim(store.db, key, me).catch(() => undefined); // refused: nothing was sent, a retry is a new attempt
        throw e;
      }
      // Taken over meanwhile (this process was paused or cut off past its liveness, and another delivered under the
      // same platform key): the key's answer is the one recorded, which every repeat gets, so this caller gets it too.
      if (await settleClaim(store.db, key, me, res)) return res;
      log.warn({ key }, 'keyed send: the claim was taken over while this process sent; answering what the key recorded');
    }
    throw stillPending(key);
  }

  return {
    plugins,
    resolveRoute,
    deliver,
    async send(raw) {
      const parsed = sendParams.safeParse(raw);
      if (!parsed.success) {
        throw new CrosstalkError(
          'invalid_request',
          `invalid send params: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
          parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
        );
      }
      const p = parsed.data;
      if (!p.idempotencyKey) return sendOnce(p);
      const key = `send:${p.idempotencyKey}`;
      const running = inflight.get(key);
      if (running) return running;
      const work = sendClaimed(p, key);
      inflight.set(key, work);
      try {
        return await work;
      } finally {
        inflight.delete(key);
      }
    },
    closeOrphanedSends() {
      // One pass at a time (the cluster's sweep asks every few hundred ms); a failed pass is logged, the next one tries again.
      const resume = (row: DeliveryRow) => void resumeSend(row).catch((e: unknown) => log.warn({ err: (e as Error).message, deliveryId: row.id }, 'channel send taken over failed'));
      const alive = async () => new Set((await store.db.selectFrom('processes').select('id').where('status', '=', 'alive').execute()).map((r) => r.id));
      closing ??= closeOrphanedSends(store, { resume, ...(orchestrator.cluster ? { alive, me: orchestrator.cluster.id || undefined } : {}) })
        .catch((e: unknown) => (log.warn({ err: (e as Error).message }, 'could not close channel sends left in flight'), 0))
        .finally(() => (closing = null));
      return closing;
    },
    async sendOwedReplies(o) {
      if (!router) return 0;
      return router.sweepOwed(o).catch((e: unknown) => (log.warn({ err: (e as Error).message }, 'could not look for replies a stopped process owed'), 0));
    },
    async sendFromAgent(s) {
      if (!orchestrator.agent(s.agentId)) throw new CrosstalkError('unknown_agent', `unknown agent ${s.agentId}`);
      const { route, target } = resolveRoute(s);
      const deliveryId = s.deliveryId ?? newDeliveryId();
      const messageId = await deliverAndMirror({
        agentId: s.agentId,
        channel: route.channel,
        route,
        target,
        sessionKey: route.sessionKey,
        text: s.text,
        via: 'message',
        runId: s.runId,
        sourceSessionKey: s.sourceSessionKey,
        signal: s.signal,
        deliveryId,
        ...(s.callId ? { callId: s.callId } : {}),
      });
      if (s.runId) {
        let set = delivered.get(s.runId);
        if (!set) delivered.set(s.runId, (set = new Set()));
        set.add(deliveryKey(route.channel, target.to, target.threadId, s.text));
      }
      return { messageId, sessionKey: route.sessionKey, channel: route.channel, to: target.to, ...(target.threadId ? { threadId: target.threadId } : {}), deliveryId };
    },
    handleInbound: (channel, req) => handleInbound({ config, store, orchestrator, log, plugin, deliver, decide: (ch, ds) => chatApprovals?.decide(ch, ds) ?? Promise.resolve() }, channel, req),
    pairingsList: async () => ({ pairings: await listPairings(store) }),
    async pairingsResolve(raw) {
      const parsed = pairingsResolveParams.safeParse(raw);
      if (!parsed.success) throw new CrosstalkError('invalid_request', 'invalid pairings.resolve params', parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })));
      plugin(parsed.data.channel); // unknown_channel before anything changes
      const { held } = await resolvePairing(store, parsed.data);
      const d = { config, store, orchestrator, log, plugin, deliver };
      for (const h of held) if (await claimHeld(store, h.id)) await submitInbound(d, plugin(parsed.data.channel), h.message, h.agentId);
      return { status: 'ok' as const };
    },
    deliveredBy: (runId) => delivered.get(runId) ?? new Set(),
    start() {
      router ??= startReplyRouting({ store, bus, log, telemetry: deps.telemetry, plugin, deliver, owner: () => orchestrator.cluster?.id || undefined, deliveredBy: (runId) => delivered.get(runId), forgetRun: (runId) => delivered.delete(runId) });
      chatApprovals ??= startChatApprovals({ config, store, bus, orchestrator, log, plugin });
    },
    stop() {
      router?.stop();
      router = null;
      chatApprovals?.stop();
      chatApprovals = null;
    },
    async idle() {
      await router?.idle();
      await chatApprovals?.idle();
    },
    retained: () => ({ ...(router?.retained() ?? { origins: 0, chains: 0, traces: 0 }), delivered: delivered.size, approvalPosts: chatApprovals?.inflightCount() ?? 0 }),
  };
}
