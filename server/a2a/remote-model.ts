// A remote A2A agent as one more model provider (LanguageModel v4): each model step sends the newest user turn to the remote through the SDK client.
// The run loop, sessions_send, agents_message, delegate_agent and follow-ups therefore work unchanged; contextId: an opaque id per session.
import { A2A_HOPS_KEY } from './params';
import crypto from 'node:crypto';
import { type AgentCard, Role, type Message, type SendMessageRequest, type StreamResponse, type Task, TaskState } from '@a2a-js/sdk';
import { AgentCardResolver, type Client, ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4Prompt, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import type { Store } from '../store/store';
import { RemoteRefused, remoteFetch } from './remote-fetch';
import { isTerminal, textOf, textPart } from './tasks';

export interface RemoteA2AConfig {
  url: string;
  token?: string;
  /** Each HTTP request to the remote ends after this long (default 5 minutes; the card: at most 10 s). */
  timeoutMs?: number;
  /** A reply (one HTTP response body) longer than this fails the turn (default 1 MiB). */
  maxReplyBytes?: number;
}

export interface RemoteA2ADeps {
  /** `webhooks.allowPrivateNetwork`: the remote passes the webhook SSRF rules. */
  allowPrivateNetwork: boolean;
  /** The opaque, per-session `contextId` sent in place of our session key (see `remoteContextId`). */
  contextId(): Promise<string>;
  /** The calling run's own remote-agent hops (its origin's `a2aHops`): the message carries one more. */
  hops?(): number;
  /** The session's remote task that waits for input (`input-required`): the next turn answers it (see `remoteOpenTask`). */
  openTask?: OpenTask;
}

export interface OpenTask {
  get(): Promise<string | undefined>;
  set(taskId: string | undefined): Promise<void>;
}

const CARD_PATH = '.well-known/agent-card.json';
const POLL_MS = 250;
export const REMOTE_TIMEOUT_MS = 5 * 60_000;
const CARD_TIMEOUT_MS = 10_000;
export const REMOTE_MAX_REPLY_BYTES = 1024 * 1024;
const CARD_MAX_BYTES = 256 * 1024;

interface Remote {
  client: Client;
  card: AgentCard;
  /** When its card was read: read again after CARD_TTL_MS, and at once after a call that failed. */
  at: number;
}

/** How long a remote's card is trusted: a redeployed remote (streaming off, another path) is picked up after it. */
const CARD_TTL_MS = 5 * 60_000;

const remoteKey = (cfg: RemoteA2AConfig, deps: RemoteA2ADeps) =>
  JSON.stringify([cfg.url, cfg.token ?? '', deps.allowPrivateNetwork, cfg.timeoutMs ?? REMOTE_TIMEOUT_MS, cfg.maxReplyBytes ?? REMOTE_MAX_REPLY_BYTES]);

// One client per remote once its card is in; a pending card fetch is never shared, so one run's slow card (cut off
// by its own timeout and abort signal) holds up no other run.
const remotes = new Map<string, Remote>();

/** The card URL of a configured `a2a.url`: the URL itself when it names a .json card, else `<url>/.well-known/agent-card.json`. */
export function cardUrlOf(url: string): string {
  if (/\.json($|\?)/.test(url)) return url;
  return new URL(CARD_PATH, url.endsWith('/') ? url : `${url}/`).toString();
}

const originOf = (url: string) => {
  try {
    return new URL(url).origin;
  } catch {
    return 'an unparseable URL';
  }
};

async function remoteFor(cfg: RemoteA2AConfig, deps: RemoteA2ADeps, signal: AbortSignal | undefined): Promise<Remote> {
  const timeoutMs = cfg.timeoutMs ?? REMOTE_TIMEOUT_MS;
  const maxBytes = cfg.maxReplyBytes ?? REMOTE_MAX_REPLY_BYTES;
  const key = remoteKey(cfg, deps);
  const hit = remotes.get(key);
  if (hit && Date.now() - hit.at < CARD_TTL_MS) return hit;
  const cardUrl = cardUrlOf(cfg.url);
  const origin = new URL(cardUrl).origin;
  const cardFetch = remoteFetch({ origin, allowPrivateNetwork: deps.allowPrivateNetwork, timeoutMs: Math.min(CARD_TIMEOUT_MS, timeoutMs), maxBytes: CARD_MAX_BYTES });
  const res = await cardFetch(cardUrl, { headers: { 'A2A-Version': '1.0' }, signal });
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(`remote A2A card ${cardUrl} answered ${res.status}`);
  }
  const card = AgentCardResolver.default.normalizeAgentCard(await res.json());
  // The card decides where our token goes: only to the origin we were configured with.
  const elsewhere = (card.supportedInterfaces ?? []).find((i) => originOf(i.url) !== origin);
  if (elsewhere) throw new RemoteRefused(`remote A2A card ${cardUrl} sends calls to ${originOf(elsewhere.url)}, off its own origin ${origin}: refused`);
  const fetchImpl = remoteFetch({ origin, token: cfg.token, allowPrivateNetwork: deps.allowPrivateNetwork, timeoutMs, maxBytes });
  const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })] });
  const remote = { client: await factory.createFromAgentCard(card), card, at: Date.now() };
  remotes.set(key, remote);
  return remote;
}

/**
 * The `contextId` a session's turns carry to remotes: a random id kept in the session's meta, so follow-ups continue
 * the remote's context while our session key (which can hold a Telegram id or a phone number) never leaves.
 */
export async function remoteContextId(store: Store, sessionKey: string): Promise<string> {
  const row = await store.getSession(sessionKey);
  const meta = (row?.meta ? JSON.parse(row.meta) : {}) as Record<string, unknown>;
  if (typeof meta.a2aContextId === 'string') return meta.a2aContextId;
  const id = `ctx-${crypto.randomUUID()}`;
  if (row) await store.patchSession(sessionKey, { meta: JSON.stringify({ ...meta, a2aContextId: id }) });
  return id;
}

/** The newest user-side turn (a message, an inter-session message, a callback result): what the remote is asked. */
function newestUserText(prompt: LanguageModelV4Prompt): string {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const m = prompt[i]!;
    if (m.role !== 'user') continue;
    return m.content.map((p) => (p.type === 'text' ? p.text : '')).join('\n').trim();
  }
  return '';
}

/** Folds one stream response into the reply: artifact text (appended or replaced), else the last status message. */
class Reply {
  private artifacts = new Map<string, string>();
  private statusText = '';
  state: TaskState = TaskState.TASK_STATE_SUBMITTED;
  taskId = '';
  /** Whether the remote answered anything: a send refused before it did was not taken. */
  answered = false;

  /** Returns the new text to stream, if any. */
  add(r: StreamResponse): string {
    const p = r.payload;
    if (!p) return '';
    this.answered = true;
    switch (p.$case) {
      case 'message':
        this.state = TaskState.TASK_STATE_COMPLETED;
        this.statusText = textOf(p.value);
        return '';
      case 'task':
        return this.task(p.value);
      case 'statusUpdate':
        this.taskId ||= p.value.taskId;
        this.state = p.value.status?.state ?? this.state;
        if (p.value.status?.message) this.statusText = textOf(p.value.status.message);
        return '';
      case 'artifactUpdate': {
        this.taskId ||= p.value.taskId;
        const a = p.value.artifact;
        if (!a) return '';
        const text = a.parts.map((x) => (x.content?.$case === 'text' ? x.content.value : '')).join('');
        const before = this.artifacts.get(a.artifactId) ?? '';
        const next = p.value.append ? before + text : text;
        this.artifacts.set(a.artifactId, next);
        return next.startsWith(before) && this.artifacts.size === 1 ? next.slice(before.length) : '';
      }
    }
  }

  task(t: Task): string {
    this.answered = true;
    this.taskId = t.id;
    this.state = t.status?.state ?? this.state;
    if (t.status?.message) this.statusText = textOf(t.status.message);
    for (const a of t.artifacts ?? []) this.artifacts.set(a.artifactId, a.parts.map((x) => (x.content?.$case === 'text' ? x.content.value : '')).join(''));
    return '';
  }

  get text(): string {
    const art = [...this.artifacts.values()].filter(Boolean).join('\n');
    return art || this.statusText;
  }

  get failed(): string | null {
    if (this.state === TaskState.TASK_STATE_FAILED || this.state === TaskState.TASK_STATE_REJECTED || this.state === TaskState.TASK_STATE_CANCELED) {
      return `remote A2A agent ${TaskState[this.state].replace('TASK_STATE_', '').toLowerCase()}: ${this.statusText || 'no details'}`;
    }
    return null;
  }
}

/** A task state that waits for the caller (input, or an authorization): the turn ends there. */
const waitsForInput = (state: TaskState) => state === TaskState.TASK_STATE_INPUT_REQUIRED || state === TaskState.TASK_STATE_AUTH_REQUIRED;

const pause = async (signal: AbortSignal | undefined) => {
  await new Promise((r) => setTimeout(r, POLL_MS));
  if (signal?.aborted) throw signal.reason ?? new Error('aborted');
};

/**
 * The session's open task as the remote has it when the next turn comes: still waiting for input (the turn answers it
 * in that task), or not: `result` is what it ended with (a crosstalk remote's task goes on by itself once its approval
 * is resolved there, CONTRACT §8), empty when the remote forgot it. One still working is waited for until it ends or
 * waits again.
 */
async function openTaskNow(client: Client, id: string, signal: AbortSignal | undefined): Promise<{ waiting: true } | { waiting: false; result: string }> {
  for (;;) {
    let task: Task;
    try {
      task = await client.getTask({ tenant: '', id }, { signal });
    } catch (e) {
      if (e instanceof TaskNotFoundError) return { waiting: false, result: '' };
      throw e;
    }
    const state = task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED;
    if (waitsForInput(state)) return { waiting: true };
    if (state !== TaskState.TASK_STATE_WORKING && state !== TaskState.TASK_STATE_SUBMITTED) {
      const r = new Reply();
      r.task(task);
      return { waiting: false, result: r.failed ?? r.text };
    }
    await pause(signal);
  }
}

export function createRemoteA2AModel(cfg: RemoteA2AConfig, deps: RemoteA2ADeps): LanguageModelV4 {
  const doStream = async (options: LanguageModelV4CallOptions) => {
    const signal = options.abortSignal;
    const { client, card } = await remoteFor(cfg, deps, signal);
    // A task the remote left waiting for input (its question was the last turn's answer): this turn answers it, in
    // that task. Before, every turn opened a new task, and the remote's question was never answered.
    const open = (await deps.openTask?.get()) ?? '';
    const message: Message = {
      messageId: crypto.randomUUID(),
      contextId: await deps.contextId(),
      taskId: open,
      role: Role.ROLE_USER,
      parts: [textPart(newestUserText(options.prompt))],
      // Counted by a crosstalk gateway that receives it (handler.ts): a loop of remote agents stops at the depth limit.
      metadata: { [A2A_HOPS_KEY]: (deps.hops?.() ?? 0) + 1 },
      extensions: [],
      referenceTaskIds: [],
    };
    let reply = new Reply();
    // Cancelling our run cancels the remote task.
    const onAbort = () => {
      if (reply.taskId && !isTerminal(reply.state)) void client.cancelTask({ tenant: '', id: reply.taskId, metadata: undefined }).catch(() => undefined);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const textId = `a2a-${crypto.randomUUID()}`;
    const stream = new ReadableStream<LanguageModelV4StreamPart>({
      async start(controller) {
        controller.enqueue({ type: 'stream-start', warnings: [] });
        controller.enqueue({ type: 'text-start', id: textId });
        let streamed = '';
        // What the open task ended with while nobody here waited on it: it leads this turn's reply (null: it did not
        // end without us). It lands once: the open task is let go with the turn that carries it.
        let ended: string | null = null;
        const lead = () => (ended ? `${ended}\n\n` : '');
        const emit = (delta: string) => {
          const text = (streamed ? '' : lead()) + delta;
          streamed += text;
          controller.enqueue({ type: 'text-delta', id: textId, delta: text });
        };
        /** Sends the message (in `taskId`, or as a new task of the context) and reads the remote's reply into `reply`. */
        const send = async (taskId: string) => {
          const request: SendMessageRequest = { tenant: '', message: { ...message, taskId }, configuration: undefined, metadata: undefined };
          if (card.capabilities?.streaming) {
            for await (const r of client.sendMessageStream(request, { signal })) {
              const delta = reply.add(r);
              if (delta) emit(delta);
              // Waiting for input: this turn's answer is its question. A remote may keep the stream open meanwhile (a
              // crosstalk gateway does, while its approval waits): reading on, the run hung until the remote moved.
              if (waitsForInput(reply.state)) break;
            }
          } else {
            // Not blocking: the task comes back at once with its id, so a cancel of our run reaches the remote (a
            // blocking send left no task id to cancel until it ended), and it is polled until it ends.
            const first = await client.sendMessage({ ...request, configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true } }, { signal });
            if ('status' in first) reply.task(first as Task);
            else reply.add({ payload: { $case: 'message', value: first as Message } });
            // A non-streaming remote that answered before finishing: poll the task until it ends.
            while (reply.taskId && !isTerminal(reply.state) && !waitsForInput(reply.state)) {
              await pause(signal);
              reply.task(await client.getTask({ tenant: '', id: reply.taskId }, { signal }));
            }
          }
        };
        try {
          // The open task may have moved on since it asked: a crosstalk remote's task ends by itself once its approval
          // is resolved there. An ended task takes no more messages (sent into it, the message was refused and the turn
          // failed, the task's result never seen here): its result leads this reply, and the message goes as a new task
          // of the same context.
          let into = open;
          if (open) {
            const now = await openTaskNow(client, open, signal);
            if (!now.waiting) [ended, into] = [now.result, ''];
          }
          try {
            await send(into);
          } catch (e) {
            // Refused before it was taken (the task ended, or was forgotten, between the look above and the send):
            // the same once more as a new task. Taken messages are never sent again.
            if (!into || reply.answered || signal?.aborted || !(e instanceof UnsupportedOperationError || e instanceof TaskNotFoundError)) throw e;
            const now = await openTaskNow(client, into, signal);
            if (now.waiting) throw e;
            [ended, into, reply] = [now.result, '', new Reply()];
            await send(into);
          }
          if (signal?.aborted) throw signal.reason ?? new Error('aborted');
          const failed = reply.failed;
          if (failed) throw new Error(failed);
          // Waiting for input (or an authorization): the next turn goes to this task; any other end closes it.
          if (waitsForInput(reply.state) && reply.taskId) await deps.openTask?.set(reply.taskId);
          else if (open) await deps.openTask?.set(undefined);
          const text = lead() + reply.text;
          if (!streamed) controller.enqueue({ type: 'text-delta', id: textId, delta: text });
          else if (text !== streamed && text.startsWith(streamed)) controller.enqueue({ type: 'text-delta', id: textId, delta: text.slice(streamed.length) });
          controller.enqueue({ type: 'text-end', id: textId });
          controller.enqueue({
            type: 'finish',
            finishReason: { unified: 'stop', raw: TaskState[reply.state] },
            usage: { inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: undefined, text: undefined, reasoning: undefined } },
          });
          controller.close();
        } catch (e) {
          // Its card may be stale (the remote redeployed with streaming off, or moved): read it again next time.
          if (!signal?.aborted) remotes.delete(remoteKey(cfg, deps));
          // The open task is gone or refused (the remote restarted): the next turn starts a new one. Not one that ended
          // without us while its result has not landed yet: the next turn looks again and lands it.
          if (open && !ended && !signal?.aborted) await deps.openTask?.set(undefined).catch(() => undefined);
          controller.error(e);
        } finally {
          signal?.removeEventListener('abort', onAbort);
        }
      },
    });
    return { stream, request: { body: { tenant: '', message, configuration: undefined, metadata: undefined } } };
  };
  return {
    specificationVersion: 'v4',
    provider: 'a2a',
    modelId: cfg.url,
    supportedUrls: {},
    doStream,
    doGenerate: async () => {
      throw new Error('a remote A2A agent is only driven through doStream');
    },
  };
}
