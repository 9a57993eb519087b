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
import type { AnyChannelPlugin, ChannelOrigin, InboundMessage, InboundRequest, ResolvedTarget } from './types';
import { admit, claimHeld, claimOnce, heldFor, pairingNotice, senderRule } from '../trust/pairing';

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

const STATUS: Partial<Record<string, number>> = { unauthorized: 401, forbidden: 403, invalid_request: 400, unknown_channel: 404, unknown_agent: 500, channel_error: 404 };

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
    // Platforms redeliver on timeouts; one message is one turn. The claim is one insert: two deliveries at once land once.
    if (msg.dedupeId && !(await claimOnce(d.store, `inbound:${msg.dedupeId}`, new Date(req.now).toISOString()))) continue;
    const admission = await admit(d.store, d.log, rule, plugin.id, agentId, msg);
    if (admission.kind === 'drop') {
      d.log.info({ channel: plugin.id, from: msg.from, reason: admission.reason }, 'inbound message from a sender that is not allowed: dropped');
      continue;
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
      continue;
    }
    // An approved sender's messages still held (an approve cut short by a stop) run first, in order.
    for (const h of await heldFor(d.store, plugin.id, msg.from)) if (await claimHeld(d.store, h.id)) accepted.push(await submitInbound(d, plugin, h.message, h.agentId));
    accepted.push(await submitInbound(d, plugin, msg, agentId));
  }
  return { status: result.response?.status ?? 200, body: result.response?.body ?? { ok: true }, accepted };
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

/** Routes one admitted message to its session and submits it as a run carrying the channel's origin (and trust). */
export async function submitInbound(d: InboundDeps, plugin: AnyChannelPlugin, msg: InboundMessage, agentId: string): Promise<InboundOutcome['accepted'][number]> {
  const route = resolveInboundSessionRoute(plugin, msg, { agentId, session: d.config.session });
  await d.store.ensureSession({
    key: route.sessionKey,
    agentId,
    kind: 'channel',
    meta: sessionMeta(route, { from: msg.from, deliverTo: msg.replyTarget.to, deliverThreadId: msg.replyTarget.threadId }),
  });
  const origin: ChannelOrigin = {
    id: plugin.id,
    to: msg.replyTarget.to,
    ...(msg.replyTarget.threadId ? { threadId: msg.replyTarget.threadId } : {}),
    ...(msg.replyTarget.replyTo ? { replyTo: msg.replyTarget.replyTo } : {}),
    ...(msg.accountId ? { accountId: msg.accountId } : {}),
    from: msg.from,
    chatType: msg.peer.kind,
    ...(msg.messageId ? { messageId: msg.messageId } : {}),
  };
  const input = {
    content: msg.text,
    kind: 'message' as const,
    author: { type: 'channel' as const, id: `${plugin.id}:${msg.from}`, ...(msg.senderName ? { name: msg.senderName } : {}) },
    meta: { channel: plugin.id, from: msg.from, chatType: msg.peer.kind, ...(msg.messageId ? { messageId: msg.messageId } : {}) },
  };
  const trust = { kind: 'channel' as const, channel: plugin.id, peer: msg.from };
  let res;
  try {
    res = await d.orchestrator.submit(route.sessionKey, input, { origin: { channel: origin, trust } });
  } catch (e) {
    // A person's message is never dropped: a session in `reject` mode takes it as a follow-up.
    if (!isCrosstalkError(e) || e.code !== 'agent_busy') throw e;
    res = await d.orchestrator.submit(route.sessionKey, input, { origin: { channel: origin, trust }, queueMode: 'followup' });
  }
  return { sessionKey: route.sessionKey, runId: res.runId, status: res.status };
}
