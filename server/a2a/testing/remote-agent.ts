// A real remote A2A agent for the tests: @a2a-js/sdk's DefaultRequestHandler behind its own Express handlers, with an echo executor that remembers each context.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AgentCard, TaskState } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor, DefaultRequestHandler, type ExecutionEventBus, InMemoryTaskStore, type RequestContext } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';
import { textOf, textPart } from '../tasks';

export class EchoExecutor implements AgentExecutor {
  readonly turns = new Map<string, number>();
  readonly started: string[] = [];
  readonly cancelled: string[] = [];
  private readonly contexts = new Map<string, string>();
  private readonly stops = new Map<string, () => void>();

  private status(bus: ExecutionEventBus, taskId: string, contextId: string, state: TaskState, text?: string) {
    const message = text === undefined ? undefined : { messageId: `${taskId}-${state}`, contextId, taskId, role: 2, parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [] };
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata: undefined }));
  }

  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    const text = textOf(ctx.userMessage);
    this.started.push(text);
    // The answer to an input-required task: the same task goes on (and completes with what it asked for).
    if (ctx.task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
      // A stream opens with the task itself, as for a new one.
      bus.publish(AgentEvent.task({ ...ctx.task, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() } }));
      const reply = `task ${taskId} got: ${text}`;
      bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: 'reply', name: 'reply', description: '', parts: [textPart(reply)], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
      this.status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED, reply);
      bus.finished();
      return;
    }
    this.contexts.set(taskId, contextId);
    const n = (this.turns.get(contextId) ?? 0) + 1;
    this.turns.set(contextId, n);
    bus.publish(AgentEvent.task({ id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() }, artifacts: [], history: [ctx.userMessage], metadata: undefined }));
    this.status(bus, taskId, contextId, TaskState.TASK_STATE_WORKING);
    if (text.includes('explode')) {
      this.status(bus, taskId, contextId, TaskState.TASK_STATE_FAILED, 'kaboom');
      bus.finished();
      return;
    }
    // "ask me": the task needs input (its question in the status message), and waits for it.
    if (text.includes('ask me')) {
      this.status(bus, taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED, `task ${taskId} asks: which colour?`);
      bus.finished();
      return;
    }
    if (text.includes('slow')) {
      const stopped = await new Promise<boolean>((resolve) => {
        const t = setTimeout(() => resolve(false), 30_000);
        this.stops.set(taskId, () => {
          clearTimeout(t);
          resolve(true);
        });
      });
      if (stopped) return;
    }
    // "huge <n>": a reply of n bytes (the caller's reply cap).
    const huge = /^huge (\d+)$/.exec(text);
    const reply = huge ? 'x'.repeat(Number(huge[1])) : `remote[${contextId}] #${n}: ${text}`;
    bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: 'reply', name: 'reply', description: '', parts: [textPart(reply)], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
    this.status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED, reply);
    bus.finished();
  }

  async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    this.cancelled.push(taskId);
    this.stops.get(taskId)?.();
    this.status(bus, taskId, this.contexts.get(taskId) ?? '', TaskState.TASK_STATE_CANCELED, 'canceled by the caller');
    bus.finished();
  }
}

export interface RemoteAgent {
  url: string;
  executor: EchoExecutor;
  close(): Promise<void>;
}

/** Starts the remote on 127.0.0.1 (ephemeral port); calls need `Authorization: Bearer <token>` when a token is given. */
export async function startRemoteAgent(o: { token?: string; streaming?: boolean; port?: number } = {}): Promise<RemoteAgent> {
  const executor = new EchoExecutor();
  const app = express();
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(o.port ?? 0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card: AgentCard = {
    name: 'Remote echo',
    description: 'An SDK-built echo agent',
    supportedInterfaces: [{ url: `${url}/rpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: o.streaming ?? true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/rpc', (req, res, next) => (!o.token || req.headers.authorization === `Bearer ${o.token}` ? next() : res.status(401).json({ error: 'unauthorized' })));
  app.use('/rpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  return {
    url,
    executor,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
