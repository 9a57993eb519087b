// Approvals in chat: a run started on Telegram/Slack/Discord (or any delegate under it) posts its approval requests with buttons to the approvers (`channels.<name>.approvers`); only they decide, never on a call their own message started; the first decision wins wherever it was made, and the chat messages are edited to say who decided.
import type { CrosstalkConfig } from '../config';
import { errorMessage, isCrosstalkError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Logger } from '../logger';
import type { DecidedBy, Decision } from '../orchestrator/approvals';
import type { Orchestrator } from '../orchestrator/orchestrator';
import { appendTranscript } from '../orchestrator/transcript';
import type { Store } from '../store/store';
import { elicitationContent, elicitationRequest } from './elicitation-chat';
import { APPROVAL_WIRES, BUTTONS, chatIdOf, type ChatDecision, type PostedRequest, type WireConfig } from './approval-wire';
import { resolveChannelConfig } from './delivery';
import { approversOf } from '../trust/pairing';
import { OPERATOR, type Trust } from '../trust/trust';
import { trustOfRow } from '../orchestrator/approvals';
import { channelOriginOf } from './reply-router';
import type { AnyChannelPlugin, ChannelOrigin } from './types';

/** A budget item's buttons: Allow once and Deny (its Allow always, which lifts the cap, is for approvals.resolve only). */
const BUDGET_BUTTONS = BUTTONS.filter((b) => b.decision !== 'allow_always');

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
  /** Requests whose chat post is still in flight (a bounded map: tests check it empties). */
  inflightCount(): number;
  /** Resolves when posts and edits in flight are done (tests, shutdown). */
  idle(): Promise<void>;
}

/** How many parent runs are followed up from a delegate to the run that came from a chat. */
const MAX_HOPS = 16;
const postedKey = (approvalId: string) => `chat-approval:${approvalId}`;

const DECISION_TEXT: Record<string, string> = { allow_once: 'Allowed once', allow_always: 'Allowed always', deny: 'Denied', accept: 'Answered', decline: 'Declined', cancel: 'Cancelled' };

/** Whether `from` is listed in `channels.<channel>.approvers` (ids as the platform spells them, or `<channel>:<id>`). */
export function isApprover(config: CrosstalkConfig, channel: string, from: string): boolean {
  const me = from.toLowerCase();
  return approversOf(config, channel).some((a) => a.toLowerCase() === me || a.toLowerCase() === `${channel}:${me}`);
}

/** The peer whose message started the call's trust on this channel, if any: they never decide it themselves. */
function requesterOn(trust: Trust, channel: string): string | undefined {
  return trust.kind === 'channel' && trust.channel === channel ? trust.peer.toLowerCase() : undefined;
}

/** How many approvers' direct chats one request is sent to. */
const MAX_APPROVER_DMS = 10;

/** What the store keeps per posted request: every chat message it became (a group chat, or each approver's DM). */
interface PostedRecord {
  posts?: PostedRequest[];
  sessionKey?: string;
  tool?: string;
  text?: string;
}
/** Records written before requests could go to several chats held one post at the top level. */
const postsOf = (r: (PostedRecord & Partial<PostedRequest>) | undefined): PostedRequest[] =>
  r?.posts ?? (r?.channel && r.to && r.messageId ? [{ channel: r.channel, to: r.to, messageId: r.messageId, ...(r.threadId ? { threadId: r.threadId } : {}), ...(r.accountId ? { accountId: r.accountId } : {}) }] : []);

/** "alice (Telegram)", "the operator (room)", "the reviewer", "a rule". */
export function describeDecider(by: DecidedBy | undefined, label: (channel: string) => string): string {
  switch (by?.type) {
    case 'chat':
      return `${by.name ?? by.id} (${label(by.channel)})`;
    case 'reviewer':
      return 'the reviewer';
    case 'rule':
      return 'an allow_always rule';
    case 'push':
      return 'the operator (notification)';
    case 'user':
      return by.id === 'jsonrpc' ? 'the operator (API)' : 'the operator (room)';
    default:
      return 'the operator (room)';
  }
}

/** The channels configured with `approvers` that have no approval buttons (README "Approvals in chat"). */
export function chatApproversWithoutWire(config: CrosstalkConfig): string[] {
  return Object.keys(config.channels).filter((id) => approversOf(config, id).length > 0 && !APPROVAL_WIRES[id]);
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

export function startChatApprovals(d: ChatApprovalDeps): ChatApprovals {
  const { store, bus, log } = d;
  // `approvers` on a channel with no buttons to press: accepted by the config, and nobody there can decide anything.
  for (const id of chatApproversWithoutWire(d.config)) {
    log.warn({ channel: id }, `channels.${id}.approvers: approvals in chat are offered on ${Object.keys(APPROVAL_WIRES).join(', ')}; a call from ${id} is decided in the room`);
  }
  const inflight = new Map<string, Promise<unknown>>();
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

  /**
   * Where a request goes (README "Approvals in chat"): to a group or channel chat it came from, where approvers may
   * be present; from a direct chat, to each approver's own DM instead (the requester may not decide their own call,
   * and nobody else is in their DM). Without an approver besides the requester it goes nowhere: the room decides.
   */
  async function post(ev: { runId: string; sessionKey: string; data: Record<string, unknown> }): Promise<PostedRequest[] | null> {
    const approvalId = String(ev.data.approvalId);
    const prior = (await store.getIdempotent(postedKey(approvalId))) as (PostedRecord & Partial<PostedRequest>) | undefined;
    if (prior) return postsOf(prior); // a resumed run asks again for the same approval: one chat message
    const chat = await chatOf(ev.runId);
    const wire = chat ? APPROVAL_WIRES[chat.id] : undefined;
    if (!chat || !wire) return null;
    const row = await store.getApproval(approvalId);
    const requester = requesterOn(row ? trustOfRow(row) : OPERATOR, chat.id);
    const approvers = approversOf(d.config, chat.id).filter((a) => a.toLowerCase() !== requester && a.toLowerCase() !== `${chat.id}:${requester}`);
    if (!approvers.length) {
      log.info({ approvalId, channel: chat.id }, 'approval not posted to chat: no approver configured besides the requester');
      return null;
    }
    const cfg = wireConfig(chat.id, chat.accountId);
    const args = clip(JSON.stringify(ev.data.args ?? null), 600);
    // An MCP elicitation asks its own question, with its own buttons (or the room); an MCP authorization is opened in the room.
    const elicit = ev.data.kind === 'elicitation' || ev.data.kind === 'authorization' ? elicitationRequest(ev.sessionKey, (ev.data.args ?? {}) as Record<string, unknown>) : undefined;
    const text = elicit?.text ?? `Approval needed: ${ev.sessionKey} wants to run ${String(ev.data.tool)} ${args}`;
    const inChat = chat.chatType === 'group' || chat.chatType === 'channel';
    const targets = inChat
      ? [{ to: chat.to, ...(chat.threadId ? { threadId: chat.threadId } : {}) }]
      : await Promise.all(approvers.slice(0, MAX_APPROVER_DMS).map(async (a) => ({ to: await wire.dm(cfg, a.replace(new RegExp(`^${chat.id}:`, 'i'), '')) }))).catch((e) => {
          log.warn({ approvalId, channel: chat.id, err: errorMessage(e) }, 'could not open a direct chat with an approver');
          return [];
        });
    const posts: PostedRequest[] = [];
    for (const t of targets) {
      try {
        const messageId = await wire.post(cfg, t, text, approvalId, elicit?.buttons ?? (ev.data.kind === 'budget' ? BUDGET_BUTTONS : undefined));
        posts.push({ channel: chat.id, ...t, ...(chat.accountId ? { accountId: chat.accountId } : {}), messageId });
      } catch (e) {
        log.warn({ approvalId, channel: chat.id, to: t.to, err: errorMessage(e) }, 'approval request not posted to a chat');
      }
    }
    if (!posts.length) return null;
    await store.putIdempotent(postedKey(approvalId), { posts, sessionKey: ev.sessionKey, tool: String(ev.data.tool), text } satisfies PostedRecord);
    log.info({ approvalId, channel: chat.id, to: posts.map((p) => p.to) }, 'approval request posted to chat');
    return posts;
  }

  async function settle(ev: { runId: string; sessionKey: string; data: Record<string, unknown> }): Promise<void> {
    const approvalId = String(ev.data.approvalId);
    await inflight.get(approvalId); // a post still in flight lands first
    inflight.delete(approvalId);
    const record = (await store.getIdempotent(postedKey(approvalId))) as (PostedRecord & Partial<PostedRequest>) | undefined;
    const posts = postsOf(record);
    if (!record || !posts.length) return; // never posted to a chat: the room alone shows it
    const decision = String(ev.data.decision);
    // A cancel nobody decided (its run or call ended): why, and no decider.
    const closed = decision === 'cancel' && !ev.data.by;
    const how = closed ? `Cancelled: ${String(ev.data.reason ?? 'run interrupted')}` : `${DECISION_TEXT[decision] ?? decision} by ${describeDecider(ev.data.by as DecidedBy | undefined, label)}`;
    const reason = ev.data.reason && !closed ? ` — ${String(ev.data.reason)}` : '';
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
          meta: { approvalId, decision, ...(ev.data.by ? { by: ev.data.by } : {}), chat: { channel: posts[0]!.channel, to: posts[0]!.to, messageId: posts[0]!.messageId } },
        },
      ],
      ev.runId,
    );
    // Each chat message of the request is edited to say so, and its buttons go away.
    for (const p of posts) {
      const wire = APPROVAL_WIRES[p.channel];
      if (!wire) continue;
      await wire.settle(wireConfig(p.channel, p.accountId), p, `${record.text ?? 'Approval'}\n${how}${reason}`).catch((e) => log.warn({ approvalId, to: p.to, err: errorMessage(e) }, 'chat approval message not updated'));
    }
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
      // Kept only while the post is in flight: once it landed, settle reads the store (the decision may be made,
      // and resolved, on another process, whose event never reaches this one).
      void p.finally(() => {
        if (inflight.get(approvalId) === p) inflight.delete(approvalId);
      });
    } else if (ev.data.phase === 'resolved') {
      void track(settle(ev)).catch((e) => log.warn({ approvalId, err: errorMessage(e) }, 'chat approval message not updated'));
    }
  });

  async function decideOne(channel: string, c: ChatDecision): Promise<void> {
    const wire = APPROVAL_WIRES[channel];
    // Told after the platform has its answer: Discord and Slack want an interaction acknowledged within 3 s, and a
    // follow-up only after that (the press's HTTP answer waited for this call: 4 s behind a slow follow-up endpoint).
    const tell = (text: string) => {
      if (wire) void track(wire.notify(wireConfig(channel), c, text).catch((e) => log.warn({ channel, err: errorMessage(e) }, 'could not answer the chat sender')));
    };
    const posts = postsOf((await store.getIdempotent(postedKey(c.approvalId))) as (PostedRecord & Partial<PostedRequest>) | undefined);
    // Only a request posted to this very conversation can be answered from it.
    if (!posts.some((p) => p.channel === channel && chatIdOf(channel, p.to) === chatIdOf(channel, c.chatId))) {
      log.warn({ channel, approvalId: c.approvalId, chatId: c.chatId }, 'chat decision for an approval not posted to that chat');
      await tell('This approval was not asked here.');
      return;
    }
    if (!isApprover(d.config, channel, c.from)) {
      log.warn({ channel, approvalId: c.approvalId, from: c.from }, 'chat decision refused: sender is not an approver');
      await tell('You are not allowed to decide approvals here: only approvers are.');
      return;
    }
    const row = await store.getApproval(c.approvalId);
    if (row && requesterOn(trustOfRow(row), channel) === c.from.toLowerCase()) {
      log.warn({ channel, approvalId: c.approvalId, from: c.from }, 'chat decision refused: the call was started by the approver\'s own message');
      await tell('You are not allowed to decide a call your own message started: another approver or the operator decides it.');
      return;
    }
    // A budget item's Allow always lifts the tree's cap for good: that is for approvals.resolve only (README "Budgets").
    if (row?.kind === 'budget' && c.decision === 'allow_always') {
      log.warn({ channel, approvalId: c.approvalId, from: c.from }, 'chat decision refused: allow_always on a budget item');
      await tell('A budget is raised once at a time from chat: Allow once or Deny.');
      return;
    }
    const by: DecidedBy = { type: 'chat', id: c.from, channel, ...(c.senderName ? { name: c.senderName } : {}) };
    try {
      const content = c.choice !== undefined && row ? elicitationContent(JSON.parse(row.args) as Record<string, unknown>, c.choice) : undefined;
      if (c.choice !== undefined && !content) return void (await tell('That choice does not fit this question.'));
      await d.orchestrator.approvals.resolve(c.approvalId, c.decision, undefined, by, content);
      await tell(`${DECISION_TEXT[c.decision]}.`);
    } catch (e) {
      if (isCrosstalkError(e) && (e.code === 'already_resolved' || e.code === 'unknown_approval')) await tell(`Already decided: ${e.message}`);
      // A decision that does not fit the item (a decline pressed on a tool call: only a tampered button sends one)
      // is answered in the chat like any refusal, not left spinning with an error in the log.
      else if (isCrosstalkError(e) && e.code === 'invalid_request') {
        log.warn({ channel, approvalId: c.approvalId, decision: c.decision }, 'chat decision refused: it does not fit the item');
        await tell('That choice does not fit this request.');
      } else throw e;
    }
  }

  return {
    async decide(channel, decisions) {
      for (const c of decisions) await track(decideOne(channel, c)).catch((e) => log.error({ err: e, channel }, 'chat decision failed'));
    },
    stop: off,
    inflightCount: () => inflight.size,
    async idle() {
      while (work.size) await Promise.allSettled([...work]);
    },
  };
}

export type { Decision };
