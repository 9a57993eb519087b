// The run loop: model steps through the AI SDK, tools executed here (policy, approvals), steering at step boundaries.
import type { LanguageModelV4, LanguageModelV4FunctionTool, SharedV4ProviderOptions } from '@ai-sdk/provider';
import type { CrosstalkConfig } from '../config';
import { thinkingProviderOptions } from '../models/thinking';
import { errorMessage, toolError } from '../errors';
import { failpoint } from '../failpoints';
import type { EventBus } from '../events/bus';
import type { TranscriptMessage } from '../events/types';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics';
import type { RunRow } from '../store/schema';
import { FencedError, type NewMessage, type StartedRun, type Store } from '../store/store';
import { isCutOff } from '../store/pg-errors';
import { runLogGaps } from '../store/run-log-gaps';
import { deliveredKey, isMessagingTool, postsInOrder, sentThisStep } from '../tools/messaging';
import type { AnyToolDef } from '../tools/types';
import type { Approvals, DecisionNote } from './approvals';
import { trustOf } from '../trust/trust';
import { markStarted } from './started';
import { type PromptMessage, toJsonValue, toPromptMessages, userMessage } from './context';
import { capToolCalls, functionTools, type StepToolCall, streamStep } from './model-step';
import type { ActiveRun, RunInput, RunOutcome } from './types';
import { contextView, lateMirrors } from './compaction';
import type { Budgets } from './budget';
import { afterModelStep, beforeModelStep, endToolSpan, recordApprovalWait, type RunHookDeps, startToolSpan } from './run-hooks';

export interface RunDeps extends RunHookDeps {
  /** Request-tree budgets; absent in tests that build a run loop by hand. */
  budgets?: Budgets;
  store: Store;
  bus: EventBus;
  metrics: Metrics;
  log: Logger;
  config: CrosstalkConfig;
  tools: Map<string, AnyToolDef>;
  approvals: Approvals;
  modelFor(run: ActiveRun, sessionModel: string | null): LanguageModelV4;
  /** Called when a steered message is injected, so its durable row can be retired. */
  onInjected(runId: string, into: ActiveRun): Promise<void>;
}

type ToolCall = StepToolCall & { redrive?: boolean };

/**
 * Tools that may run twice with no second effect: the read-only ones, and the messaging and delegate tools,
 * whose target run ids derive from the call id (a second call finds the first run and waits for it).
 */
export const IDEMPOTENT_TOOLS = new Set(['sessions_list', 'sessions_history', 'delegate_sessions', 'sessions_send', 'agents_message', 'delegate_agent']);

class RunAborted extends Error {}

export const SILENT_TOKEN = 'NO_REPLY';

export function inputToMessage(sessionKey: string, runId: string, input: RunInput, steered = false): NewMessage {
  return {
    sessionKey,
    role: 'user',
    kind: steered && input.kind === 'message' ? 'steer' : input.kind,
    content: input.content,
    runId,
    author: input.author,
    meta: input.meta,
  };
}

function systemPrompt(run: ActiveRun): string {
  const a = run.agent;
  if (a.system) return a.system;
  return [
    `You are ${a.name} (agent id "${a.id}", persona "${a.persona}") in crosstalk, a multi-agent gateway. Your session key is ${run.sessionKey}.`,
    'Use tools when they help and reply concisely.',
    `Reply with exactly ${SILENT_TOKEN} when nothing should be posted; send_message posts to this conversation as you go.`,
    'Delegation: before starting a new delegate, call delegate_sessions {operation:"list"} to find a warm delegate you can reuse;',
    'continue it with delegate_agent {conversation_id, prompt}. Call delegate_sessions {operation:"messages"} only when you really need to recall what it did,',
    'and dismiss delegates you no longer need. Messages from other sessions and callback results arrive as user turns.',
  ].join(' ');
}

/** Runs a run's steps; `startedWith`: its start was already written (PostgreSQL: by the enqueue statement). */
export async function executeRun(deps: RunDeps, run: ActiveRun, row: RunRow, resume: boolean, startedWith?: StartedRun): Promise<RunOutcome> {
  const { store, bus, config } = deps;
  const signal = run.abort.signal;
  const emitMessages = (rows: TranscriptMessage[]) => {
    for (const m of rows) bus.emit(run.id, 'message', { message: m });
  };
  const append = async (msgs: NewMessage[], merge?: { runIds: string[]; into: string }) => {
    const rows = await store.appendMessages(msgs, { run: true, ...(merge ? { merge } : {}) }); // the run's own rows: fenced by its lease
    emitMessages(rows);
    return rows;
  };

  const inputs = JSON.parse(row.input) as RunInput[];
  let session: Awaited<ReturnType<Store['getSession']>> = undefined;
  if (row.origin) run.origin = JSON.parse(row.origin) as Record<string, unknown>;
  if (!resume) {
    const started = startedWith ?? (await store.startRun(run.id, run.sessionKey, inputs.map((i) => inputToMessage(run.sessionKey, run.id, i))));
    if (!started) return { status: 'abandoned', error: 'skipped' }; // cancelled (from any process) before it started
    markStarted(run);
    // The rest in a task of its own: the answer to the message that started the run (`agent`, told by markStarted)
    // leaves first, and the client's next request (`agent.wait`) is on its way while the first step is prepared,
    // instead of after it (a turn's latency, issue 24.4). The run's first events are emitted after the yield, so the
    // bus's log batch they start goes with the run's end (written folded, in the same transaction) as before.
    await new Promise<void>((r) => setImmediate(r));
    bus.emit(run.id, 'lifecycle', startData(run, row));
    for (const i of inputs) {
      const endedAt = i.kind === 'agent_callback_result' ? (i.meta?.targetEndedAt as string | undefined) : undefined;
      if (endedAt) deps.metrics.callbackLatency.observe((Date.now() - Date.parse(endedAt)) / 1000);
    }
    emitMessages(started.rows);
    // Its start and input rows committed and `agent` told (markStarted); its first events still wait for the bus's batch.
    failpoint('run.started');
    session = started.session;
  } else {
    await store.updateRunFenced(run.id, run.sessionKey, { status: 'running' });
    await mendLog(deps, run, row);
  }
  session ??= await store.getSession(run.sessionKey);
  const sessionCwd = (session?.meta ? (JSON.parse(session.meta) as { cwd?: unknown }).cwd : undefined) as string | undefined;
  if (typeof sessionCwd === 'string' && sessionCwd) run.cwd = sessionCwd;

  // The session row (read with the run's start on PostgreSQL) carries its message count, input rows included: on
  // PostgreSQL it tells whether this process's cached rows are current, or another process wrote meanwhile.
  const count = session?.message_count;
  const view = await contextView(store, run.sessionKey, config.session.contextMessages, count);
  const transcript = view.rows; // the newest summary and the rows after it
  run.contextTruncated = view.truncated; // the first step's compaction check need not read the session again
  const messages: PromptMessage[] = toPromptMessages(transcript, run.id);
  run.promptThrough = transcript.reduce((n, m) => Math.max(n, m.id), 0);
  let lastText = '';
  for (const m of transcript) if (m.runId === run.id && m.role === 'assistant' && m.kind === 'message') lastText = m.content.trim();

  const model = deps.modelFor(run, session?.model ?? null);
  // The session's thinkingLevel, for this run's own steps only (not compaction summaries or the reviewer).
  const thinking = thinkingProviderOptions(session?.thinking_level);
  const toolSet = functionTools(deps.tools).filter((t) => deps.tools.get(t.name)?.visibleTo?.(run.agent) ?? true);

  const maxSteps = run.agent.limits.maxSteps;
  try {
    if (resume) {
      // Re-drive from the last completed step: tool calls of this run that never got a result (paused on an
      // approval, not started, or in flight when the process stopped) run now, through `runTool`'s re-drive rule.
      // A model step that was in flight is simply asked again by the loop below.
      const answered = new Set(transcript.filter((m) => m.kind === 'tool_result').map((m) => m.tool?.callId));
      const pending = transcript.filter((m) => m.runId === run.id && m.kind === 'tool_call' && m.tool && !answered.has(m.tool.callId));
      if (pending.length) {
        // A call that stood for those past the per-step cap answers limit_exceeded again (its row says so).
        const calls = pending.map((m) => {
          const limitError = typeof m.meta?.limitExceeded === 'string' ? m.meta.limitExceeded : undefined;
          return { toolCallId: m.tool!.callId, toolName: m.tool!.name, input: m.tool!.args, redrive: true, ...(limitError ? { limitError } : {}) };
        });
        await runTools(deps, run, calls, append);
        // The prompt is built again from the transcript, so the re-driven results join the step's results written
        // before the stop: the step stays one assistant turn with all its calls and one tool turn with all its
        // results, as the model made it (appended apart, it read as two steps, and a reply to "the results" had only
        // the re-driven ones).
        const rebuilt = (await contextView(store, run.sessionKey, config.session.contextMessages)).rows;
        messages.splice(0, messages.length, ...toPromptMessages(rebuilt, run.id));
        run.promptThrough = rebuilt.reduce((n, m) => Math.max(n, m.id), run.promptThrough ?? 0);
      } else {
        // The last step finished with text and no tool calls (they are written with it): the run was done, only
        // its end was not recorded. Asking the model again would answer twice.
        const own = transcript.filter((m) => m.runId === run.id);
        const last = own[own.length - 1];
        if (last?.role === 'assistant' && last.kind === 'message' && !run.inbox.length) return { status: 'ok', response: lastText };
      }
    }
    for (let step = 0; ; step++) {
      if (signal.aborted) throw new RunAborted();
      await injectInbox(deps, run, messages, append);
      if (step >= maxSteps) throw new Error(`run stopped after ${maxSteps} model steps`);

      const answer = await modelStep(deps, run, model, messages, toolSet, thinking);
      const { text } = answer;
      const calls = capToolCalls(answer.calls);
      const trimmed = text.trim();
      if (trimmed) lastText = trimmed;
      // Text this step also sends to the own stream (send_message) or the chat it answers (message) is delivered once, by the tool.
      const sentNow = sentThisStep(calls, run.origin);
      const key = deliveredKey(text);
      const posting = trimmed !== '' && trimmed !== SILENT_TOKEN && run.agent.reply !== 'tool' && !run.delivered.has(key) && !sentNow.has(key);
      const stepRows: NewMessage[] = [];
      if (posting) stepRows.push({ sessionKey: run.sessionKey, role: 'assistant', kind: 'message', content: text, runId: run.id, author: { type: 'agent', id: run.agent.id, name: run.agent.name } });
      for (const c of calls)
        stepRows.push({
          sessionKey: run.sessionKey,
          role: 'assistant',
          kind: 'tool_call',
          content: '',
          runId: run.id,
          author: { type: 'agent', id: run.agent.id, name: run.agent.name },
          tool: { name: c.toolName, callId: c.toolCallId, args: c.input ?? null },
          ...(c.limitError ? { meta: { limitExceeded: c.limitError } } : {}),
        });
      if (posting) run.counters.set('posted', (run.counters.get('posted') ?? 0) + 1);
      if (!calls.length && !run.inbox.length) {
        // The last step: its rows are written with the run's end, in one transaction. From here on (no await
        // since the inbox was looked at), a message for this session is a follow-up with its own run.
        if (stepRows.length) run.finalRows = stepRows;
        run.closing = true;
        break;
      }
      if (stepRows.length) await append(stepRows);
      if (calls.length) failpoint('tool_calls.written');
      // Signed reasoning leads the step's turn (Anthropic refuses a tool-use turn without it while thinking is on).
      const said = [...(answer.reasoning ?? []), ...(text ? [{ type: 'text' as const, text }] : [])];
      if (said.length) messages.push({ role: 'assistant', content: said });
      // Messages steered in during this step still belong to this run (their senders were told so): one more step.
      if (!calls.length) continue;
      pushToolCalls(messages, calls);
      messages.push(await runTools(deps, run, calls, append));
      // Mirrors written into the session while the calls ran are context of the next step, after their results.
      const late = await lateMirrors(store, run.sessionKey, run.promptThrough ?? 0, run.id);
      if (late.length) {
        run.promptThrough = late[late.length - 1]!.id;
        messages.push(...toPromptMessages(late));
      }
    }
    if (signal.aborted) throw new RunAborted();
    return { status: 'ok', response: lastText };
  } catch (e) {
    // Fenced: another process drives the run now; this copy ends quietly (no end, event or webhook of its own).
    if (e instanceof FencedError) throw e;
    // PostgreSQL went away under the run (a restart, a terminated connection): the run is not over; it is dropped
    // here and re-driven from its last written step once the database answers (Orchestrator.sweepOrphans).
    // So is a write that kept losing lock conflicts (deadlocks) past the store's own retries.
    if (deps.store.dialect === 'postgres' && isCutOff(e)) throw e;
    // Stopped from outside (interrupt mode, dismiss, delete, cancel): an `error` with code `interrupted` (`cancelled` for a
    // cancel, RunEnds.finish). The status `interrupted` is kept for a run that cannot be re-driven (CONTRACT §4).
    if (signal.aborted || e instanceof RunAborted) return { status: 'error', error: 'interrupted', response: lastText };
    deps.log.warn({ runId: run.id, err: errorMessage(e) }, 'run failed');
    return { status: 'error', error: errorMessage(e), response: lastText };
  }
}

/** A run's `lifecycle` `start` event's data. */
function startData(run: ActiveRun, row: RunRow): Record<string, unknown> {
  return { phase: 'start', agentId: run.agent.id, ...(row.origin ? { origin: JSON.parse(row.origin) } : {}), ...(run.traceId ? { traceId: run.traceId, traceparent: run.traceparent } : {}) };
}

/**
 * A re-drive (a takeover, a restart, a resume) first makes the run's event log whole (CONTRACT §3, §4): a process that
 * died after committing rows and before the bus wrote their events (its batch, a few ms later) left rows with no
 * `message` event, or a run with no `lifecycle` `start`, and the seq went on without a gap. The missing start, then the
 * missing rows' events (oldest first) are emitted here before the run goes on, so subscribers and replays see every
 * row once: an event that did get written is found and not emitted again. Two bounded reads, on a re-drive only.
 */
export async function mendLog(deps: RunDeps, run: ActiveRun, row: RunRow): Promise<void> {
  await deps.bus.settledRun(run.id); // events of an earlier copy of the run here (a batch tried again) are in the log first
  const gaps = await runLogGaps(deps.store.db, { runId: run.id, sessionKey: run.sessionKey, since: row.started_at ?? row.created_at });
  if (!gaps.started) deps.bus.emit(run.id, 'lifecycle', startData(run, row));
  for (const m of gaps.unlogged) deps.bus.emit(run.id, 'message', { message: m });
  if (!gaps.started || gaps.unlogged.length) deps.log.warn({ runId: run.id, start: !gaps.started, messages: gaps.unlogged.length }, 're-drive: emitted the events its earlier process did not log');
}

/** Items raised during a call that died with its process (an MCP elicitation, `<callId>:…`) are closed, never left pending. */
async function closeCallItems(deps: RunDeps, runId: string, callId: string) {
  const reason = 'interrupted: the process running the call stopped';
  for (const r of await deps.store.pendingApprovals({ runId }))
    if (r.call_id.startsWith(`${callId}:`) && (await deps.store.settleApproval(r.id, 'cancelled', 'cancel', reason))) deps.bus.emit(runId, 'approval', { phase: 'resolved', approvalId: r.id, decision: 'cancel', reason });
}

function pushToolCalls(messages: PromptMessage[], calls: ToolCall[]) {
  const parts = calls.map((c) => ({ type: 'tool-call' as const, toolCallId: c.toolCallId, toolName: c.toolName, input: c.input ?? {} }));
  const last = messages[messages.length - 1];
  if (last?.role === 'assistant' && Array.isArray(last.content)) last.content.push(...parts);
  else messages.push({ role: 'assistant', content: parts });
}

async function injectInbox(deps: RunDeps, run: ActiveRun, messages: PromptMessage[], append: (m: NewMessage[], merge?: { runIds: string[]; into: string }) => Promise<unknown>) {
  while (run.inbox.length) {
    const items = run.inbox.splice(0);
    await Promise.all(items.map((i) => i.persisted));
    // PostgreSQL: their queued runs are merged in the same statement (a crash before `onInjected` must not leave them
    // queued to run again as follow-ups); `onInjected` records it here too (SQLite, and the run's `injected`).
    await append(items.map((i) => inputToMessage(run.sessionKey, run.id, i.input, true)), { runIds: items.map((i) => i.runId), into: run.id });
    for (const i of items) {
      messages.push(userMessage(i.input.content));
      await deps.onInjected(i.runId, run);
    }
  }
}

async function modelStep(deps: RunDeps, run: ActiveRun, model: LanguageModelV4, messages: PromptMessage[], tools: LanguageModelV4FunctionTool[], providerOptions: SharedV4ProviderOptions | undefined) {
  const signal = run.abort.signal;
  let step;
  const system = systemPrompt(run);
  // Past the request tree's budget, the step waits on the tree's one `budget` item (CONTRACT §5 "Budgets").
  await deps.budgets?.beforeStep(run, signal);
  const frame = await beforeModelStep(deps, run, model, messages, tools, system);
  try {
    step = await streamStep(model, { system, messages, tools, signal, providerOptions, onDelta: (delta) => deps.bus.emit(run.id, 'assistant', { delta }) });
    await afterModelStep(deps, run, frame, step);
  } catch (e) {
    if (!step) await afterModelStep(deps, run, frame, undefined, e);
    if (signal.aborted) throw new RunAborted();
    deps.metrics.modelSteps.inc({ outcome: 'error' });
    throw e;
  }
  if (signal.aborted) throw new RunAborted();
  deps.metrics.modelSteps.inc({ outcome: 'ok' });
  return step;
}

async function runTools(deps: RunDeps, run: ActiveRun, calls: ToolCall[], append: (m: NewMessage[]) => Promise<unknown>): Promise<PromptMessage> {
  // Posts (send_message, channel sends) go out in call order; every other call runs alongside them.
  const results: unknown[] = new Array(calls.length);
  const indexed = calls.map((c, i) => [c, i] as const);
  const inOrder = indexed.filter(([c]) => postsInOrder(c.toolName));
  await Promise.all([
    (async () => {
      for (const [c, i] of inOrder) results[i] = await runTool(deps, run, c, append);
    })(),
    ...indexed.filter(([c]) => !postsInOrder(c.toolName)).map(async ([c, i]) => (results[i] = await runTool(deps, run, c, append))),
  ]);
  return {
    role: 'tool',
    content: calls.map((c, i) => ({ type: 'tool-result' as const, toolCallId: c.toolCallId, toolName: c.toolName, output: { type: 'json' as const, value: toJsonValue(results[i]) } })),
  };
}

async function runTool(deps: RunDeps, run: ActiveRun, call: ToolCall, append: (m: NewMessage[]) => Promise<unknown>): Promise<unknown> {
  const { bus, metrics } = deps;
  const signal = run.abort.signal;
  const messaging = isMessagingTool(call.toolName);
  const traced = startToolSpan(deps, run, call);
  bus.emit(run.id, 'tool', { phase: 'start', name: call.toolName, callId: call.toolCallId, args: toJsonValue(call.input), ...(messaging ? { messaging } : {}) });
  let result: unknown;
  let outcome = 'ok';
  /** Who decided the call (a person, the reviewer, a rule): its result row and end event say so, the card shows it. */
  let decided: DecisionNote | undefined;
  const def = deps.tools.get(call.toolName);
  // A call re-driven after its process stopped: what it raised and left pending (an MCP elicitation) died with it.
  if (call.redrive) await closeCallItems(deps, run.id, call.toolCallId);
  if (call.limitError) {
    result = toolError('limit_exceeded', call.limitError);
  } else if (!def || def.visibleTo?.(run.agent) === false) {
    // An MCP server that never came up has no tool list yet: its tools are unavailable rather than unknown.
    // A started call re-driven before its MCP server is back is still the call that was in flight: `interrupted`.
    const inFlight = call.redrive && !def && (await deps.store.toolStarted(run.id, call.toolCallId));
    result = inFlight
      ? toolError('interrupted', `${call.toolName} was in flight when its process stopped; it was not run again (its effect is unknown)`)
      : !def && call.toolName.startsWith('mcp__') ? toolError('tool_unavailable', `${call.toolName} is not available (its MCP server is down or does not offer it)`) : toolError('invalid_request', `unknown tool ${call.toolName}`);
  } else if (call.invalidError) {
    result = toolError('invalid_request', `invalid arguments for ${call.toolName}: ${call.invalidError}`);
  } else {
    const parsed = def.inputSchema.safeParse(call.input);
    if (!parsed.success) {
      result = toolError('invalid_request', `invalid arguments for ${call.toolName}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
    } else {
      const asked = Date.now();
      const gate = await deps.approvals.gate({ runId: run.id, sessionKey: run.sessionKey, agent: run.agent, callId: call.toolCallId, tool: def.name, args: parsed.data, signal, trust: trustOf(run.origin), ...(def.source ? { source: def.source } : {}) });
      recordApprovalWait(deps, traced.span, def.name, asked, !!gate.waited, gate.allowed ? 'allowed' : 'denied');
      if (gate.decided) decided = gate.decided;
      if (!gate.allowed) {
        result = { status: 'denied', reason: gate.reason };
        outcome = 'denied';
      } else if (!IDEMPOTENT_TOOLS.has(def.name) && !(await deps.store.markToolStarted(run.id, call.toolCallId, run.sessionKey))) {
        // The call's start is a claim, fenced by the lease: only the process that wins it runs the tool. Lost: it
        // had started before (in a process that died, or in a zombie still holding a stale lease), so it is not
        // run again (its effect is unknown). A fenced claim throws: this process no longer drives the run.
        result = toolError('interrupted', `${def.name} was in flight when its process stopped; it was not run again (its effect is unknown)`);
        outcome = 'error';
      } else {
        try {
          // Aborted while the call was being approved or marked: it does not start (a tool listens for the abort from
          // its start on; an abort that came before would never reach it, and the tool would run to its end).
          result = signal.aborted
            ? toolError('interrupted', 'run interrupted')
            : await def.execute(parsed.data, { runId: run.id, sessionKey: run.sessionKey, agent: run.agent, callId: call.toolCallId, signal, counters: run.counters, delivered: run.delivered, origin: run.origin, sessionCwd: run.cwd, traceparent: traced.traceparent });
        } catch (e) {
          // This process lost the session's lease during the call (an MCP call's status write was refused): quiet end.
          if (e instanceof FencedError) throw e;
          // PostgreSQL went away under a tool that is safe to call again (a send finds its own delivery by the call's
          // id): the run is cut off like any of its writes and its re-drive calls the tool again, rather than telling
          // the model the send failed (issue 20: a send cut by a restart never reached its target).
          if (deps.store.dialect === 'postgres' && IDEMPOTENT_TOOLS.has(def.name) && isCutOff(e)) throw e;
          deps.log.error({ err: e, tool: def.name }, 'tool threw');
          result = toolError('internal', `${def.name} failed: ${errorMessage(e)}`);
        }
      }
    }
  }
  // A graceful stop: record nothing of this call; the re-drive runs it (or answers `interrupted` if it had started).
  if (signal.aborted && signal.reason === Symbol.for('crosstalk.shutdown')) throw new RunAborted();
  if (outcome === 'ok' && (result as { status?: string } | null)?.status === 'error') outcome = 'error';
  endToolSpan(deps, traced.span, outcome);
  // A name the model made up is not a label: every new label is a series Prometheus keeps for good.
  metrics.toolCalls.inc({ tool: def ? call.toolName : 'unknown', outcome });
  if (messaging) metrics.messagingCalls.inc({ tool: call.toolName, outcome });
  await append([
    {
      sessionKey: run.sessionKey,
      role: 'tool',
      kind: 'tool_result',
      content: '',
      runId: run.id,
      author: { type: 'system', id: call.toolName },
      tool: { name: call.toolName, callId: call.toolCallId, args: call.input ?? null, result: result ?? null },
      ...(decided ? { meta: { decided } } : {}),
    },
  ]);
  bus.emit(run.id, 'tool', { phase: 'end', name: call.toolName, callId: call.toolCallId, status: outcome, result: toJsonValue(result), ...(messaging ? { messaging } : {}), ...(decided ? { decided } : {}) });
  if (signal.aborted) throw new RunAborted();
  return result;
}
