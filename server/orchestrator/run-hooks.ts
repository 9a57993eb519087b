// The run loop's hooks for issue 13, kept out of run-loop.ts: compaction before a model step, usage and token
// attributes after it, spans for the run, each step, each tool call and each approval wait.
import type { LanguageModelV4, LanguageModelV4FunctionTool } from '@ai-sdk/provider';
import type { RunRow } from '../store/schema';
import { SpanKind, type Telemetry, traceparentOf } from '../telemetry/tracing';
import type { Usage } from '../usage/usage';
import type { Compactor } from './compaction';
import { observeUsage } from './compaction';
import type { PromptMessage } from './context';
import type { StepResult, StepToolCall } from './model-step';
import { treeOf } from './budget';
import type { ActiveRun, RunOutcome } from './types';

export interface RunHookDeps {
  usage?: Usage;
  telemetry?: Telemetry;
  compactor?: Compactor;
}

const stepped = new WeakSet<ActiveRun>();
const specOf = (run: ActiveRun) => run.modelSpec ?? run.agent.models[0] ?? 'scripted';

/** The run's span, under the traceparent its origin carries (the caller's tool call, the target run of a callback…). */
export function startRunTrace(d: RunHookDeps, run: ActiveRun, row: RunRow): void {
  const origin = row.origin ? (JSON.parse(row.origin) as { traceparent?: unknown }) : undefined;
  const inherited = typeof origin?.traceparent === 'string' ? origin.traceparent : undefined;
  const span = d.telemetry?.start(`run ${run.agent.id}`, inherited, { 'crosstalk.run_id': run.id, 'crosstalk.session_key': run.sessionKey, 'crosstalk.agent_id': run.agent.id }, { kind: SpanKind.SERVER });
  run.span = span;
  // With tracing off the inherited context passes through untouched (free), so a tracing process further on still joins it.
  run.traceparent = span ? traceparentOf(span) : inherited;
  run.traceId = span?.spanContext().traceId;
}

export function endRunTrace(d: RunHookDeps, run: ActiveRun, outcome: RunOutcome): void {
  if (!run.span) return;
  d.telemetry?.end(run.span, outcome.status === 'ok' ? undefined : (outcome.error ?? outcome.status), { 'crosstalk.run.status': outcome.status });
  run.span = undefined;
}

export interface StepFrame {
  raw: number;
  span?: ReturnType<Telemetry['start']>;
}

/** Before a model step: compact when the prompt would pass the threshold (rewrites `messages` in place), open the step span. */
export async function beforeModelStep(d: RunHookDeps, run: ActiveRun, model: LanguageModelV4, messages: PromptMessage[], tools: LanguageModelV4FunctionTool[], system: string): Promise<StepFrame> {
  const modelSpec = specOf(run);
  let raw = 0;
  if (d.compactor) {
    const r = await d.compactor.beforeStep(
      { sessionKey: run.sessionKey, agentId: run.agent.id, modelSpec, model, runId: run.id, system, tools, signal: run.abort.signal, traceparent: run.traceparent },
      messages,
      { checkRowCount: !stepped.has(run) && run.contextTruncated !== false },
    );
    stepped.add(run);
    // Rebuilt from the store: the mirrors it read are in the prompt now (lateMirrors reads after them).
    if (r.through) run.promptThrough = Math.max(run.promptThrough ?? 0, r.through);
    // Its estimate when it left the messages as they were; after a compaction, theirs anew.
    raw = r.raw ?? d.compactor.estimate({ modelSpec, system, tools }, messages).raw;
  }
  const span = run.span ? d.telemetry?.start(`chat ${modelSpec}`, run.span, { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': modelSpec, 'crosstalk.prompt.estimated_tokens': raw }, { kind: SpanKind.CLIENT }) : undefined;
  return { raw, span };
}

/** After a model step: the provider's usage corrects later estimates, is recorded (tokens, cost) and goes on the span. */
export async function afterModelStep(d: RunHookDeps, run: ActiveRun, frame: StepFrame, step: StepResult | undefined, error?: unknown): Promise<void> {
  const modelSpec = specOf(run);
  const u = step?.usage;
  const tokens = { inputTokens: u?.inputTokens ?? 0, outputTokens: u?.outputTokens ?? 0, cachedTokens: u?.cachedInputTokens ?? 0 };
  if (frame.span) {
    d.telemetry?.end(frame.span, error ? String((error as Error)?.message ?? error) : undefined, {
      'gen_ai.usage.input_tokens': tokens.inputTokens,
      'gen_ai.usage.output_tokens': tokens.outputTokens,
      'gen_ai.usage.cache_read.input_tokens': tokens.cachedTokens,
    });
  }
  if (!step) return;
  observeUsage(modelSpec, frame.raw, u?.inputTokens);
  if (d.usage && u) await d.usage.record({ runId: run.id, sessionKey: run.sessionKey, agentId: run.agent.id, model: modelSpec, kind: 'step', tokens, rootRunId: treeOf(run).root });
}

/** A tool call's span; its traceparent goes to the tool (sessions_send, delegates carry it on). */
export function startToolSpan(d: RunHookDeps, run: ActiveRun, call: StepToolCall) {
  if (!run.span) return { span: undefined, traceparent: run.traceparent };
  const span = d.telemetry?.start(`tool ${call.toolName}`, run.span, { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': call.toolName, 'gen_ai.tool.call.id': call.toolCallId });
  return { span, traceparent: span ? traceparentOf(span) : run.traceparent };
}

export function endToolSpan(d: RunHookDeps, span: ReturnType<Telemetry['start']>, outcome: string): void {
  d.telemetry?.end(span, outcome === 'error' ? 'tool answered an error' : undefined, { 'crosstalk.tool.outcome': outcome });
}

/** An approval wait, as a span from the request to the decision (recorded once it is over, only when a person was asked). */
export function recordApprovalWait(d: RunHookDeps, parent: ReturnType<Telemetry['start']>, tool: string, startedAt: number, waited: boolean, decision: string): void {
  if (!parent || !waited || !d.telemetry) return;
  const span = d.telemetry.start(`approval ${tool}`, parent, { 'crosstalk.approval.tool': tool, 'crosstalk.approval.decision': decision }, { startTime: startedAt });
  d.telemetry.end(span);
}
