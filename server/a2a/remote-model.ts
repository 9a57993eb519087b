// A remote A2A agent as one more model provider (LanguageModel v4): each model step sends the newest user turn to the remote through the SDK client.
// The run loop, sessions_send, agents_message, delegate_agent and follow-ups therefore work unchanged; contextId = our session key.
import crypto from 'node:crypto';
import { Role, type Message, type StreamResponse, type Task, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4Prompt, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { isTerminal, textOf, textPart } from './tasks';

export interface RemoteA2AConfig {
  url: string;
  token?: string;
}

const CARD_PATH = '.well-known/agent-card.json';
const POLL_MS = 250;

// One client per remote (the card is fetched once); a failed fetch is retried on the next turn.
const clients = new Map<string, Promise<Client>>();

/** The card URL of a configured `a2a.url`: the URL itself when it names a .json card, else `<url>/.well-known/agent-card.json`. */
export function cardUrlOf(url: string): string {
  if (/\.json($|\?)/.test(url)) return url;
  return new URL(CARD_PATH, url.endsWith('/') ? url : `${url}/`).toString();
}

function clientFor(cfg: RemoteA2AConfig): Promise<Client> {
  const key = `${cfg.url}|${cfg.token ?? ''}`;
  let c = clients.get(key);
  if (!c) {
    const fetchImpl: typeof fetch = (input, init) => {
      if (!cfg.token) return fetch(input, init);
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${cfg.token}`);
      return fetch(input, { ...init, headers });
    };
    const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl })] }));
    c = factory.createFromUrl(cardUrlOf(cfg.url), '');
    clients.set(key, c);
    c.catch(() => clients.delete(key));
  }
  return c;
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

  /** Returns the new text to stream, if any. */
  add(r: StreamResponse): string {
    const p = r.payload;
    if (!p) return '';
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

export function createRemoteA2AModel(cfg: RemoteA2AConfig, sessionKey: string): LanguageModelV4 {
  const doStream = async (options: LanguageModelV4CallOptions) => {
    const signal = options.abortSignal;
    const client = await clientFor(cfg);
    const message: Message = {
      messageId: crypto.randomUUID(),
      contextId: sessionKey,
      taskId: '',
      role: Role.ROLE_USER,
      parts: [textPart(newestUserText(options.prompt))],
      metadata: { crosstalkSession: sessionKey },
      extensions: [],
      referenceTaskIds: [],
    };
    const request = { tenant: '', message, configuration: undefined, metadata: undefined };
    const card = await client.getAgentCard();
    const reply = new Reply();
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
        try {
          if (card.capabilities?.streaming) {
            for await (const r of client.sendMessageStream(request, { signal })) {
              const delta = reply.add(r);
              if (delta) {
                streamed += delta;
                controller.enqueue({ type: 'text-delta', id: textId, delta });
              }
            }
          } else {
            const first = await client.sendMessage(request, { signal });
            if ('status' in first) reply.task(first as Task);
            else reply.add({ payload: { $case: 'message', value: first as Message } });
            // A non-streaming remote that answered before finishing: poll the task until it ends.
            while (reply.taskId && !isTerminal(reply.state) && reply.state !== TaskState.TASK_STATE_INPUT_REQUIRED && reply.state !== TaskState.TASK_STATE_AUTH_REQUIRED) {
              await new Promise((r) => setTimeout(r, POLL_MS));
              if (signal?.aborted) throw signal.reason ?? new Error('aborted');
              reply.task(await client.getTask({ tenant: '', id: reply.taskId }, { signal }));
            }
          }
          if (signal?.aborted) throw signal.reason ?? new Error('aborted');
          const failed = reply.failed;
          if (failed) throw new Error(failed);
          const text = reply.text;
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
          controller.error(e);
        } finally {
          signal?.removeEventListener('abort', onAbort);
        }
      },
    });
    return { stream, request: { body: request } };
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
