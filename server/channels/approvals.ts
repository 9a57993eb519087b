// Approvals in the chat a run came from: a run started on Telegram/Slack/Discord (or any delegate under it) posts its approval requests there with buttons; allowed senders decide; the first decision wins wherever it was made, and the chat message is edited to say who decided.
import type { CrosstalkConfig } from '../config';
import { errorMessage, isCrosstalkError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Logger } from '../logger';
import type { DecidedBy, Decision } from '../orchestrator/approvals';
import type { Orchestrator } from '../orchestrator/orchestrator';
import { appendTranscript } from '../orchestrator/transcript';
import type { Store } from '../store/store';
import { APPROVAL_WIRES, chatIdOf, type ChatDecision, type PostedRequest, type WireConfig } from './approval-wire';
import { resolveChannelConfig } from './delivery';
import { channelOriginOf } from './reply-router';
import type { AnyChannelPlugin, ChannelOrigin } from './types';

export interface ChatApprovalDeps {
  config: CrosstalkConfig;
  store: Store;
  bus: EventBus;
  orchestrator: Orchestrator;
  log: Logger;
  plugin(id: string): AnyChannelPlugin;
}

export interface ChatApprovals {
  /** Button presses from a verified inbound request; never throws (the platform gets its answer regardless). */
  decide(channel: string, decisions: ChatDecision[]): Promise<void>;
  stop(): void;
  /** Resolves when posts and edits in flight are done (tests, shutdown). */
  idle(): Promise<void>;
}

/** How many parent runs are followed up from a delegate to the run that came from a chat. */
const MAX_HOPS = 16;
const postedKey = (approvalId: string) => `chat-approval:${approvalId}`;

const DECISION_TEXT: Record<string, string> = { allow_once: 'Allowed once', allow_always: 'Allowed always', deny: 'Denied', cancelled: 'Cancelled' };

/**
 * Whether a chat sender may decide approvals: listed in `channels.<name>.allowFrom` (ids as the
 * platform spells them, or "*"). Nobody is allowed when the list is missing. The trust work
 * (dmPolicy pairing) is meant to widen this one function.
 */
export function mayDecide(config: CrosstalkConfig, channel: string, from: string): boolean {
  const list = config.channels[channel]?.allowFrom;
  if (!Array.isArray(list)) return false;
  return list.some((x) => String(x) === '*' || String(x) === from || String(x).toLowerCase() === `${channel}:${from}`.toLowerCase());
}

/** "alice (Telegram)", "the operator (room)". */
export function describeDecider(by: DecidedBy | undefined, label: (channel: string) => string): string {
  if (!by || by.type === 'operator') return 'the operator (room)';
  return `${by.name ?? by.id} (${label(by.channel)})`;
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

export function startChatApprovals(d: ChatApprovalDeps): ChatApprovals {
  const { store, bus, log } = d;
  const inflight = new Map<string, Promise<PostedRequest | null>>();
  const work = new Set<Promise<unknown>>();
  const track = <T>(p: Promise<T>): Promise<T> => {
    work.add(p);
    void p.finally(() => work.delete(p)).catch(() => undefined);
    return p;
  };
  const label = (id: string) => {
    try {
      return d.plugin(id).label;
    } catch {
      return id;
    }
  };
  const wireConfig = (channel: string, accountId?: string): WireConfig => {
    const p = d.plugin(channel);
    return resolveChannelConfig(d.config.channels, p.id, p.configSchema, accountId) as WireConfig;
  };

  /** The chat a run answers to: its own channel origin, or the one of the run that started its chain. */
  async function chatOf(runId: string): Promise<ChannelOrigin | null> {
    let id: string | undefined = runId;
    for (let hop = 0; id && hop < MAX_HOPS; hop++) {
      const row = await store.getRun(id);
      if (!row?.origin) return null;
      const origin = JSON.parse(row.origin) as { from?: { runId?: string }; callbackOf?: string };
      const chat = channelOriginOf(origin);
      if (chat) return chat;
      id = origin.from?.runId ?? origin.callbackOf;
    }
    return null;
  }

  async function post(ev: { runId: string; sessionKey: string; data: Record<string, unknown> }): Promise<PostedRequest | null> {
    const approvalId = String(ev.data.approvalId);
    const prior = (await store.getIdempotent(postedKey(approvalId))) as PostedRequest | undefined;
    if (prior) return prior; // a resumed run asks again for the same approval: one chat message
    const chat = await chatOf(ev.runId);
    const wire = chat ? APPROVAL_WIRES[chat.id] : undefined;
    if (!chat || !wire) return null;
    const args = clip(JSON.stringify(ev.data.args ?? null), 600);
    const text = `Approval needed: ${ev.sessionKey} wants to run ${String(ev.data.tool)} ${args}`;
    const messageId = await wire.post(wireConfig(chat.id, chat.accountId), { to: chat.to, ...(chat.threadId ? { threadId: chat.threadId } : {}) }, text, approvalId);
    const posted: PostedRequest = { channel: chat.id, to: chat.to, ...(chat.threadId ? { threadId: chat.threadId } : {}), ...(chat.accountId ? { accountId: chat.accountId } : {}), messageId };
    await store.putIdempotent(postedKey(approvalId), { ...posted, sessionKey: ev.sessionKey, tool: ev.data.tool, text });
    log.info({ approvalId, channel: chat.id, to: chat.to, messageId }, 'approval request posted to chat');
    return posted;
  }

  async function settle(ev: { runId: string; sessionKey: string; data: Record<string, unknown> }): Promise<void> {
    const approvalId = String(ev.data.approvalId);
    await inflight.get(approvalId); // a post still in flight lands first
    inflight.delete(approvalId);
    const record = (await store.getIdempotent(postedKey(approvalId))) as (PostedRequest & { text?: string; tool?: string }) | undefined;
    if (!record) return; // never posted to a chat: the room alone shows it
    const decision = String(ev.data.decision);
    const how = decision === 'cancelled' ? `Cancelled: ${String(ev.data.reason ?? 'run interrupted')}` : `${DECISION_TEXT[decision] ?? decision} by ${describeDecider(ev.data.by as DecidedBy | undefined, label)}`;
    const reason = ev.data.reason && decision !== 'cancelled' ? ` — ${String(ev.data.reason)}` : '';
    // The room: a notice row in the session that asked, saying who decided and how.
    await appendTranscript(
      store,
      bus,
      [
        {
          sessionKey: ev.sessionKey,
          role: 'system',
          kind: 'notice',
          content: `${record.tool ?? 'tool'}: ${how}${reason}`,
          runId: ev.runId,
          author: { type: 'system', id: 'approvals' },
          meta: { approvalId, decision, ...(ev.data.by ? { by: ev.data.by } : {}), chat: { channel: record.channel, to: record.to, messageId: record.messageId } },
        },
      ],
      ev.runId,
    );
    // The chat: the request is edited to say so, and its buttons go away.
    const wire = APPROVAL_WIRES[record.channel];
    if (!wire) return;
    await wire.settle(wireConfig(record.channel, record.accountId), record, `${record.text ?? 'Approval'}\n${how}${reason}`);
  }

  const off = bus.onEvent((ev) => {
    if (ev.stream !== 'approval') return;
    const approvalId = String(ev.data.approvalId ?? '');
    if (!approvalId) return;
    if (ev.data.phase === 'requested') {
      const p = track(post(ev)).catch((e) => {
        log.warn({ approvalId, err: errorMessage(e) }, 'approval request not posted to chat');
        return null;
      });
      inflight.set(approvalId, p);
    } else if (ev.data.phase === 'resolved') {
      void track(settle(ev)).catch((e) => log.warn({ approvalId, err: errorMessage(e) }, 'chat approval message not updated'));
    }
  });

  async function decideOne(channel: string, c: ChatDecision): Promise<void> {
    const wire = APPROVAL_WIRES[channel];
    const tell = (text: string) =>
      wire?.notify(wireConfig(channel), c, text).catch((e) => log.warn({ channel, err: errorMessage(e) }, 'could not answer the chat sender'));
    const posted = (await store.getIdempotent(postedKey(c.approvalId))) as PostedRequest | undefined;
    // Only a request posted to this very conversation can be answered from it.
    if (!posted || posted.channel !== channel || chatIdOf(channel, posted.to) !== chatIdOf(channel, c.chatId)) {
      log.warn({ channel, approvalId: c.approvalId, chatId: c.chatId }, 'chat decision for an approval not posted to that chat');
      await tell('This approval was not asked here.');
      return;
    }
    if (!mayDecide(d.config, channel, c.from)) {
      log.warn({ channel, approvalId: c.approvalId, from: c.from }, 'chat decision refused: sender not allowed');
      await tell('You are not allowed to decide approvals here.');
      return;
    }
    const by: DecidedBy = { type: 'channel', channel, id: c.from, ...(c.senderName ? { name: c.senderName } : {}) };
    try {
      await d.orchestrator.approvals.resolve(c.approvalId, c.decision, undefined, by);
      await tell(`${DECISION_TEXT[c.decision]}.`);
    } catch (e) {
      if (isCrosstalkError(e) && (e.code === 'already_resolved' || e.code === 'unknown_approval')) await tell(`Already decided: ${e.message}`);
      else throw e;
    }
  }

  return {
    async decide(channel, decisions) {
      for (const c of decisions) await track(decideOne(channel, c)).catch((e) => log.error({ err: e, channel }, 'chat decision failed'));
    },
    stop: off,
    async idle() {
      while (work.size) await Promise.allSettled([...work]);
    },
  };
}

export type { Decision };
