// The A2A request handler of one agent (CONTRACT §8): sends become turns in `agent:<id>:a2a:<contextId>`, tasks are runs, streams come from the event log.
import crypto from 'node:crypto';
import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetExtendedAgentCardRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import type { AgentConfig } from '../config';
import { isCrosstalkError } from '../errors';
import type { FullRuntime } from '../runtime-types';
import { MAX_MESSAGE_BYTES } from '../gateway/schemas';
import { SESSION_KEY_RE } from '../sessions/keys';
import { a2aHopsOf, MAX_CONTEXT_ID } from './params';
import type { ApprovalRow, RunRow } from '../store/schema';
import { treeOfRow } from '../orchestrator/budget';
import type { A2APush } from './push';
import { a2aSessionKey, contextOfRun, SIGNAL_KEY, isFinal, isTerminal, stateOf, streamResponsesOf, taskOf, taskResponse, textOf } from './tasks';

const TERMINAL_ROWS = new Set(['ok', 'error', 'interrupted']);

export class CrosstalkA2AHandler implements A2ARequestHandler {
  constructor(
    private readonly rt: FullRuntime,
    private readonly agent: AgentConfig,
    private readonly card: () => AgentCard,
    private readonly push: A2APush,
  ) {}

  async getAgentCard(): Promise<AgentCard> {
    return this.card();
  }

  async getAuthenticatedExtendedAgentCard(_p: GetExtendedAgentCardRequest, _c: ServerCallContext): Promise<AgentCard> {
    return this.card();
  }

  /** The run a task id names, when it belongs to one of this agent's A2A sessions; otherwise TaskNotFound. */
  private async run(taskId: string): Promise<{ row: RunRow; contextId: string }> {
    let row = taskId ? await this.rt.store.getRun(taskId) : undefined;
    if (row?.status === 'merged' && row.merged_into) row = await this.rt.store.getRun(row.merged_into);
    const contextId = row ? contextOfRun(row, this.agent.id) : null;
    if (!row || contextId === null) throw new TaskNotFoundError(`no task ${taskId}`);
    return { row, contextId };
  }

  /**
   * The items a task waits on (CONTRACT §8: input-required while an approval waits): its run's own, and those of the
   * delegates below its session that belong to its request tree (a standard `delegate_agent` waits on its delegate's).
   */
  private async pendingOf(row: RunRow): Promise<ApprovalRow[]> {
    if (TERMINAL_ROWS.has(row.status)) return [];
    const all = await this.rt.store.pendingApprovals({ under: row.session_key });
    const below = [...new Set(all.filter((a) => a.run_id !== row.id).map((a) => a.run_id))];
    const runs = await Promise.all(below.map((id) => this.rt.store.getRun(id)));
    const tree = new Set(runs.filter((r) => r && treeOfRow(r).root === row.id).map((r) => r!.id));
    return all.filter((a) => a.run_id === row.id || tree.has(a.run_id));
  }

  private async snapshot(taskId: string): Promise<Task> {
    const { row, contextId } = await this.run(taskId);
    const pending = await this.pendingOf(row);
    return taskOf({ row, contextId, pending: pending.map((p) => ({ approvalId: p.id, kind: p.kind, tool: p.tool, args: JSON.parse(p.args) as unknown })) });
  }

  /** Accepts the message as a turn in the context's session; answers the task id (a steered message joins the active run). */
  private async submit(p: SendMessageRequest): Promise<{ runId: string; contextId: string; sessionKey: string }> {
    const message = p.message as Message | undefined;
    if (!message) throw new RequestMalformedError('message is required');
    const text = textOf(message).trim();
    if (!text) throw new RequestMalformedError('the message has no text part');
    // The gateway's input rules (CONTRACT §3, §5), whatever the dialect's parser let through.
    if (text.includes('\u0000')) throw new RequestMalformedError('the message text must not contain NUL');
    if (Buffer.byteLength(text) > MAX_MESSAGE_BYTES) throw new RequestMalformedError(`the message text is over ${MAX_MESSAGE_BYTES} bytes (256 KiB)`);
    if ((message.contextId ?? '').length > MAX_CONTEXT_ID) throw new RequestMalformedError(`contextId is over ${MAX_CONTEXT_ID} characters`);
    let contextId = message.contextId;
    if (message.taskId) {
      // A task named must be one of this agent's (TaskNotFound otherwise), in the context the message names, if any.
      const task = await this.run(message.taskId);
      if (contextId && a2aSessionKey(this.agent.id, contextId) !== task.row.session_key) throw new RequestMalformedError(`task ${message.taskId} belongs to another contextId`);
      // A task that has ended takes no more messages (A2A: a refinement is a new task in the same context), as the
      // SDK's own handler answers; it used to start a new task quietly, under another id than the one named.
      const state = stateOf(task.row, 0);
      if (isTerminal(state)) throw new UnsupportedOperationError(`task ${message.taskId} is in a terminal state (${TaskState[state]}) and cannot be modified: send the message with its contextId and no taskId`);
      contextId ||= task.contextId;
    }
    contextId ||= crypto.randomUUID();
    const sessionKey = a2aSessionKey(this.agent.id, contextId);
    if (!SESSION_KEY_RE.test(sessionKey)) throw new RequestMalformedError('contextId may only hold [a-z0-9:._+-]');
    // A push URL the SSRF rules refuse is refused before the message is taken (it used to run anyway, and a client
    // that fixed the URL and sent again got a second run).
    const hook = p.configuration?.taskPushNotificationConfig;
    if (hook?.url) await this.push.check(hook.url);
    // A message a remote-agent call of a crosstalk run made (its own gateway, or one that calls back): past the
    // delegation depth it is refused, so gateways that are each other's remotes (or one its own) do not loop forever.
    const hops = a2aHopsOf(message.metadata);
    const maxHops = this.agent.limits.maxDelegateDepth;
    if (hops > maxHops) throw new RequestMalformedError(`limit_exceeded: this message went through ${hops} remote-agent calls of crosstalk gateways, over limits.maxDelegateDepth (${maxHops}): a loop of remote agents?`);
    try {
      // A message from another agent: a `session_message` delivery (§9) that its run moves on to its answer.
      const res = await this.rt.gateway.agentDelivered({
        sessionKey,
        message: text,
        author: { type: 'channel', id: 'a2a', name: 'A2A client' },
        meta: { a2a: { messageId: message.messageId, contextId } },
        origin: { channel: 'a2a', agentId: this.agent.id, contextId, ...(hops ? { a2aHops: hops } : {}) },
      });
      if (hook?.url) await this.push.register({ ...hook, taskId: res.runId });
      return { runId: res.runId, contextId, sessionKey }; // as the client spelled it (its session key is lowercased)
    } catch (e) {
      if (isCrosstalkError(e)) throw new RequestMalformedError(`${e.code}: ${e.message}`);
      throw e;
    }
  }

  async sendMessage(p: SendMessageRequest, c: ServerCallContext): Promise<Message | Task> {
    const { runId } = await this.submit(p);
    if (p.configuration?.returnImmediately) return this.snapshot(runId);
    // Blocking: until the run ends or waits on an approval (input-required), as A2A's blocking send does.
    for await (const r of this.follow(runId, { replay: true, untilInputRequired: true, signal: signalOf(c) })) void r;
    return this.snapshot(runId);
  }

  async *sendMessageStream(p: SendMessageRequest, c: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const { runId } = await this.submit(p);
    yield taskResponse(await this.snapshot(runId));
    yield* this.follow(runId, { replay: true, signal: signalOf(c) });
  }

  /**
   * Resubscribing replays the task's events from the event log, then goes live: a client that reconnects misses nothing.
   * An ended task's replay ends with its end event; one whose end is not in the log (a run a migration closed) has
   * nothing more to come, and its stream ends with the snapshot: it used to wait for an end that never came.
   */
  async *resubscribe(p: SubscribeToTaskRequest, c: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const task = await this.snapshot(p.id);
    yield taskResponse(task);
    if (isTerminal(task.status!.state) && !(await this.endLogged(task.id))) return;
    yield* this.follow(task.id, { replay: true, signal: signalOf(c) });
  }

  /** Whether the run's end (a lifecycle `end` or `error` event) is in the event log. */
  private async endLogged(runId: string): Promise<boolean> {
    const rows = await this.rt.store.db.selectFrom('events').select('data').where('run_id', '=', runId).where('stream', '=', 'lifecycle').execute();
    return rows.some((r) => {
      const phase = (JSON.parse(r.data) as { phase?: unknown } | null)?.phase;
      return phase === 'end' || phase === 'error';
    });
  }

  /**
   * The run's stream responses from the event log (from its first event when `replay`), live after that, until the task ends
   * (or first waits on an approval, with `untilInputRequired`).
   */
  async *follow(runId: string, o: { replay: boolean; untilInputRequired?: boolean; signal?: AbortSignal }): AsyncGenerator<StreamResponse, void, undefined> {
    const { row, contextId } = await this.run(runId);
    const sub = this.rt.bus.subscribe({ runId: row.id }, o.replay ? { id: 0 } : undefined);
    try {
      // The run may already have ended with its end event logged before we subscribed: the replay covers it.
      for (;;) {
        const ev = await sub.next(o.signal);
        if (!ev) return;
        for (const r of streamResponsesOf(ev, contextId)) {
          yield r;
          if (isFinal(r)) return;
          if (o.untilInputRequired && r.payload?.$case === 'statusUpdate' && r.payload.value.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
            // Only when it still waits: a replayed request whose approval was already resolved goes on.
            const fresh = await this.rt.store.getRun(row.id);
            if (fresh && stateOf(fresh, (await this.pendingOf(fresh)).length) === TaskState.TASK_STATE_INPUT_REQUIRED) return;
          }
        }
        if (ev.stream === 'lifecycle' && (ev.data.phase === 'end' || ev.data.phase === 'error')) return;
      }
    } finally {
      sub.close();
    }
  }

  async getTask(p: GetTaskRequest, _c: ServerCallContext): Promise<Task> {
    const task = await this.snapshot(p.id);
    if (p.historyLength === 0) task.history = [];
    else if (p.historyLength) task.history = task.history.slice(-p.historyLength);
    return task;
  }

  async listTasks(_p: ListTasksRequest, _c: ServerCallContext): Promise<ListTasksResponse> {
    throw new UnsupportedOperationError('tasks/list is not supported: use tasks/get with a task id');
  }

  /** cancel → agent.cancel; the answer is the task once the run has ended (canceled). */
  async cancelTask(p: CancelTaskRequest, _c: ServerCallContext): Promise<Task> {
    const { row } = await this.run(p.id);
    try {
      await this.rt.orchestrator.cancel(row.id, 'cancelled over A2A');
    } catch (e) {
      if (isCrosstalkError(e) && e.code === 'not_cancelable') throw new TaskNotCancelableError(`task ${p.id} has already ended`);
      throw e;
    }
    await this.rt.orchestrator.wait(row.id, 10_000);
    const task = await this.snapshot(row.id);
    if (!isTerminal(task.status!.state)) throw new TaskNotCancelableError(`task ${p.id} did not stop`);
    return task;
  }

  async createTaskPushNotificationConfig(p: TaskPushNotificationConfig, _c: ServerCallContext): Promise<TaskPushNotificationConfig> {
    await this.run(p.taskId);
    return this.push.register(p);
  }

  async getTaskPushNotificationConfig(p: GetTaskPushNotificationConfigRequest, _c: ServerCallContext): Promise<TaskPushNotificationConfig> {
    await this.run(p.taskId);
    const found = (await this.push.list(p.taskId)).find((c) => c.id === p.id);
    if (!found) throw new TaskNotFoundError(`no push notification config ${p.id} for task ${p.taskId}`);
    return found;
  }

  async listTaskPushNotificationConfigs(p: ListTaskPushNotificationConfigsRequest, _c: ServerCallContext): Promise<ListTaskPushNotificationConfigsResponse> {
    await this.run(p.taskId);
    return { configs: await this.push.list(p.taskId), nextPageToken: '' };
  }

  async deleteTaskPushNotificationConfig(p: DeleteTaskPushNotificationConfigRequest, _c: ServerCallContext): Promise<void> {
    await this.run(p.taskId);
    await this.push.remove(p.taskId, p.id);
  }
}

const signalOf = (c: ServerCallContext) => c.state.get(SIGNAL_KEY) as AbortSignal | undefined;
