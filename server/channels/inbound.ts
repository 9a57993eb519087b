// Inbound channel messages: verify with the channel's check, de-duplicate platform retries, admit the sender (dmPolicy), route, start a run.
import type { CrosstalkConfig } from '../config';
import { CrosstalkError, isCrosstalkError } from '../errors';
import { MAX_MESSAGE_BYTES } from '../gateway/schemas';
import { nulPath, UNSTORABLE_TEXT } from '../unstorable';
import type { Logger } from '../logger';
import type { Orchestrator } from '../orchestrator/orchestrator';
import type { Store } from '../store/store';
import { resolveChannelConfig } from './delivery';
import { resolveInboundSessionRoute, sessionMeta } from './routing';
import type { ChatDecision } from './approval-wire';
import type { AnyChannelPlugin, ChannelOrigin, InboundMessage, InboundRequest, Peer, ResolvedTarget } from './types';
import { admit, claimHeld, heldFor, pairingNotice, senderRule } from '../trust/pairing';
import { Claimant, ClaimTaken, dropClaim, insertClaim, readClaim, settleClaim, stillPending, takeOverClaim } from '../store/idempotency';
import { failpoint } from '../failpoints';

export interface InboundOutcome {
  status: number;
  body: unknown;
  /** The runs the request started or joined, with their sessions (for logs and tests). */
  accepted: Array<{ sessionKey: string; runId: string; status: string }>;
}

export interface InboundDeps {
  config: CrosstalkConfig;
  store: Store;
  orchestrator: Orchestrator;
  log: Logger;
  plugin(id: string): AnyChannelPlugin;
  /** Approval button presses (server/channels/approvals.ts). */
  decide?(channel: string, decisions: ChatDecision[]): Promise<void>;
  /** Channel delivery (the pairing code goes back to the sender this way). */
  deliver?(channel: string, target: ResolvedTarget, text: string): Promise<string>;
}

const STATUS: Partial<Record<string, number>> = { unauthorized: 401, forbidden: 403, invalid_request: 400, unknown_channel: 404, unknown_agent: 500, channel_error: 404, timeout: 503 };

/*
 * One message, one turn (exactly once, crashes included). Two claims in the idempotency table:
 * - its gate, `inbound:<dedupeId>`: claimed (pending, this process its owner) before anything else, settled once the
 *   message was submitted, held or dropped, and let go when the request failed (answered 500: the platform's retry
 *   starts afresh). A redelivery finds it and is dropped; one that finds its owner dead (a SIGKILL between the claim
 *   and the submit) takes it over and goes on.
 * - its acceptance, `inbound:run:<dedupeId>`: written by the very write that accepts the run (the orchestrator's
 *   idempotency claim, as `agent` uses it), so a message the dead owner did accept is not accepted again.
 * Before, the gate was all there was, committed on its own and never let go: a crash or a failed submit after it made
 * the platform's redelivery answered 200 and dropped, and the message was lost.
 */
export interface Gate {
  key: string;
  owner: string;
}
export const acceptedKey = (dedupeId: string) => `inbound:run:${dedupeId}`;

const claimants = new WeakMap<object, Claimant>();
/** This process as a claimant (the cluster's process id on PostgreSQL); a redelivery waits at most 5 s for another's. */
function claimantOf(d: Pick<InboundDeps, 'store' | 'orchestrator'>): Claimant {
  let c = claimants.get(d.store.db);
  if (!c) claimants.set(d.store.db, (c = new Claimant(d.store.db, () => d.orchestrator.cluster?.id || null, 5_000)));
  return c;
}

/** Claims a message's gate: the gate (go on), or null (accepted before, or being accepted now: nothing to do). */
async function claimGate(store: Store, claimant: Claimant, dedupeId: string): Promise<Gate | null> {
  const key = `inbound:${dedupeId}`;
  const me = claimant.me;
  for (let tries = 0; tries < 3; tries++) {
    if (await insertClaim(store.db, { key, owner: me })) return { key, owner: me };
    const seen = await claimant.await(key);
    if (seen.kind === 'none') continue; // its request failed and let it go: this one claims it
    if (seen.kind === 'done') return null;
    if (seen.kind === 'orphaned') {
      // Its claimant died (or left it without an owner) before settling: this one goes on; what that one accepted,
      // its acceptance claim keeps from running twice.
      if (await takeOverClaim(store.db, key, seen.claim.owner ?? '', me)) return { key, owner: me };
      if (!seen.claim.owner) return null;
      continue;
    }
    // Its claimant lives and is still at it past the wait: accepted, or the platform is asked to come back.
    if (await readClaim(store.db, acceptedKey(dedupeId))) return null;
    throw stillPending(key);
  }
  throw stillPending(key);
}

/** Never throws: every failure is an HTTP answer the platform understands (and that leaks no secret). */
export async function handleInbound(d: InboundDeps, channel: string, req: InboundRequest): Promise<InboundOutcome> {
  try {
    return await accept(d, channel, req);
  } catch (e) {
    if (isCrosstalkError(e)) return { status: STATUS[e.code] ?? 500, body: { ok: false, error: { code: e.code, message: e.message } }, accepted: [] };
    if (e instanceof SyntaxError) return { status: 400, body: { ok: false, error: { code: 'invalid_request', message: 'body is not valid JSON' } }, accepted: [] };
    d.log.error({ err: e, channel }, 'inbound channel request failed');
    return { status: 500, body: { ok: false, error: { code: 'internal', message: 'internal error' } }, accepted: [] };
  }
}

async function accept(d: InboundDeps, channel: string, req: InboundRequest): Promise<InboundOutcome> {
  const plugin = d.plugin(channel);
  if (!plugin.inbound) throw new CrosstalkError('unknown_channel', `channel ${plugin.id} has no inbound endpoint`);
  const cfg = resolveChannelConfig(d.config.channels, plugin.id, plugin.configSchema, undefined);
  const result = await plugin.inbound(cfg, req);
  if (result.decisions?.length) await d.decide?.(plugin.id, result.decisions);
  const agentId = (cfg as { agentId?: string }).agentId ?? d.config.defaultAgentId;
  if (!d.orchestrator.agent(agentId)) throw new CrosstalkError('unknown_agent', `config.channels.${plugin.id}.agentId: unknown agent ${agentId}`);
  const rule = senderRule(d.config, plugin.id);
  const accepted: InboundOutcome['accepted'] = [];
  for (const msg of result.messages) {
    if (Buffer.byteLength(msg.text) > MAX_MESSAGE_BYTES) throw new CrosstalkError('invalid_request', 'message is larger than 256 KiB');
    if (nulPath(msg) !== null) throw new CrosstalkError('invalid_request', `message fields: ${UNSTORABLE_TEXT}`);
    // Platforms redeliver on timeouts and errors; one message is one turn, crashes included (the claims above).
    const gate = msg.dedupeId ? await claimGate(d.store, claimantOf(d), msg.dedupeId) : undefined;
    if (gate === null) continue;
    try {
      failpoint('inbound.claimed'); // the message's gate claimed, nothing of it accepted yet
      const submitted = await acceptOne(d, plugin, rule, agentId, msg, gate, accepted);
      if (gate) {
        const settled = settleClaim(d.store.db, gate.key, gate.owner, { at: new Date(req.now).toISOString() });
        // A submitted message's acceptance claim answers a redelivery already (its run's reply may be out before this
        // write): not waited for. A held or dropped one's gate is all there is.
        if (submitted) void settled.catch((e: unknown) => d.log.warn({ err: (e as Error).message, key: gate.key }, 'could not settle an inbound claim'));
        else await settled;
      }
    } catch (e) {
      // Nothing answered this request: its platform sends it again, and that attempt starts afresh (what this one
      // accepted, if anything, its acceptance claim keeps from being accepted twice).
      if (gate) await dropClaim(d.store.db, gate.key, gate.owner).catch(() => undefined);
      throw e;
    }
  }
  return { status: result.response?.status ?? 200, body: result.response?.body ?? { ok: true }, accepted };
}

/** One message past its gate: admitted (dmPolicy) and submitted (true: now or before), held for pairing, or dropped. */
async function acceptOne(d: InboundDeps, plugin: AnyChannelPlugin, rule: ReturnType<typeof senderRule>, agentId: string, msg: InboundMessage, gate: Gate | undefined, accepted: InboundOutcome['accepted']): Promise<boolean> {
  // A held message's gate is settled with its hold (one transaction): nothing is left for a redelivery to hold again.
  const heldWith = gate && ((tx: Parameters<typeof settleClaim>[0]) => settleClaim(tx, gate.key, gate.owner, { at: new Date().toISOString(), held: true }));
  const admission = await admit(d.store, d.log, rule, plugin.id, agentId, msg, heldWith);
  if (admission.kind === 'drop') {
    d.log.info({ channel: plugin.id, from: msg.from, reason: admission.reason }, 'inbound message from a sender that is not allowed: dropped');
    return false;
  }
  if (admission.kind === 'held') {
    d.log.info({ channel: plugin.id, from: msg.from, code: admission.code }, 'inbound message held until the sender is paired');
    // The code goes with the first message, and again with a later one until a send of it got through (the first
    // send failed: a platform down or slow, and the sender never learnt their code).
    const pair = `${plugin.id}:${msg.from}:${admission.code}`;
    const retell = !admission.firstRequest && (await d.store.getIdempotent(`pairing-untold:${pair}`)) !== undefined && (await d.store.getIdempotent(`pairing-told:${pair}`)) === undefined;
    if (admission.firstRequest || retell) {
      const ok = await notifySender(d, plugin, msg, pairingNotice(admission.code));
      await d.store.putIdempotent(`pairing-${ok ? 'told' : 'untold'}:${pair}`, true).catch(() => undefined);
    }
    return false;
  }
  // An approved sender's messages still held (an approve cut short by a stop) run first, in order.
  for (const h of await heldFor(d.store, plugin.id, msg.from)) if (await claimHeld(d.store, h.id)) accepted.push(await submitInbound(d, plugin, h.message, h.agentId));
  const mine = await submitInbound(d, plugin, msg, agentId, gate && { key: acceptedKey(msg.dedupeId!), owner: gate.owner });
  if (mine) accepted.push(mine);
  return true;
}

/** Tells a sender something on the channel they wrote from; a failure is logged, never fatal to the request. Whether it got through. */
async function notifySender(d: InboundDeps, plugin: AnyChannelPlugin, msg: InboundMessage, text: string): Promise<boolean> {
  if (!d.deliver) return false;
  try {
    const target = plugin.resolveTarget({ to: msg.replyTarget.to, threadId: msg.replyTarget.threadId, accountId: msg.accountId });
    await d.deliver(plugin.id, target, text);
    return true;
  } catch (e) {
    d.log.warn({ err: e, channel: plugin.id, from: msg.from }, 'could not send the pairing code');
    return false;
  }
}

/**
 * Routes one admitted message to its session and submits it as a run carrying the channel's origin (and trust). With
 * `claim`, the message's acceptance claim is written by the write that accepts it: null when it was accepted before.
 */
export async function submitInbound(d: InboundDeps, plugin: AnyChannelPlugin, msg: InboundMessage, agentId: string): Promise<InboundOutcome['accepted'][number]>;
export async function submitInbound(d: InboundDeps, plugin: AnyChannelPlugin, msg: InboundMessage, agentId: string, claim: { key: string; owner: string } | undefined): Promise<InboundOutcome['accepted'][number] | null>;
export async function submitInbound(d: InboundDeps, plugin: AnyChannelPlugin, msg: InboundMessage, agentId: string, claim?: { key: string; owner: string }): Promise<InboundOutcome['accepted'][number] | null> {
  const route = resolveInboundSessionRoute(plugin, msg, { agentId, session: d.config.session });
  await d.store.ensureSession({
    key: route.sessionKey,
    agentId,
    kind: 'channel',
    meta: sessionMeta(route, { from: msg.from, deliverTo: msg.replyTarget.to, deliverThreadId: msg.replyTarget.threadId }),
  });
  const origin: ChannelOrigin & { peer: Peer } = {
    id: plugin.id,
    to: msg.replyTarget.to,
    ...(msg.replyTarget.threadId ? { threadId: msg.replyTarget.threadId } : {}),
    ...(msg.replyTarget.replyTo ? { replyTo: msg.replyTarget.replyTo } : {}),
    ...(msg.accountId ? { accountId: msg.accountId } : {}),
    from: msg.from,
    chatType: msg.peer.kind,
    ...(msg.messageId ? { messageId: msg.messageId } : {}),
    // Replies go to this peer when `to` is not a target the channel's parser takes (reply-router.ts).
    peer: msg.peer,
  };
  const input = {
    content: msg.text,
    kind: 'message' as const,
    author: { type: 'channel' as const, id: `${plugin.id}:${msg.from}`, ...(msg.senderName ? { name: msg.senderName } : {}) },
    meta: { channel: plugin.id, from: msg.from, chatType: msg.peer.kind, ...(msg.messageId ? { messageId: msg.messageId } : {}) },
  };
  const trust = { kind: 'channel' as const, channel: plugin.id, peer: msg.from };
  const c = claim && { ...claim, settled: false };
  let res;
  try {
    try {
      res = await d.orchestrator.submit(route.sessionKey, input, { origin: { channel: origin, trust }, ...(c ? { claim: c } : {}) });
    } catch (e) {
      // A person's message is never dropped: a session in `reject` mode takes it as a follow-up.
      if (!isCrosstalkError(e) || e.code !== 'agent_busy') throw e;
      res = await d.orchestrator.submit(route.sessionKey, input, { origin: { channel: origin, trust }, queueMode: 'followup', ...(c ? { claim: c } : {}) });
    }
  } catch (e) {
    if (e instanceof ClaimTaken) return null; // accepted before (by an attempt that died before it answered)
    throw e;
  }
  // PostgreSQL leaves a queued message's claim pending (its answer may change): this one only marks it accepted.
  if (c && !c.settled && d.orchestrator.cluster) await settleClaim(d.store.db, c.key, c.owner, res);
  return { sessionKey: route.sessionKey, runId: res.runId, status: res.status };
}
