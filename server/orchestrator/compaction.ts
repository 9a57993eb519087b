// Compaction (CONTRACT §4): the run's context is the newest summary plus the rows after it; past the threshold the older
// rows are summarized by the agent's model into a `compaction` row. A failed summary falls back to the newest rows that fit.
import crypto from 'node:crypto';
import type { LanguageModelV4, LanguageModelV4FunctionTool } from '@ai-sdk/provider';
import type { CrosstalkConfig } from '../config';
import { errorMessage } from '../errors';
import type { EventBus } from '../events/bus';
import type { TranscriptMessage } from '../events/types';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics';
import type { Store } from '../store/store';
import { toTranscriptMessage } from '../store/store';
import type { Telemetry } from '../telemetry/tracing';
import { contextWindowFor } from '../usage/prices';
import type { Usage } from '../usage/usage';
import { type PromptMessage, toPromptMessages } from './context';
import { estimateTokens, promptSize } from './prompt-size';

export const COMPACTION_SYSTEM =
  'You compact a conversation so it can continue in less context. Summarize the transcript below (and the previous summary, when one is given) ' +
  'in plain text: keep every fact, decision, name, id, number, file path, open question and unfinished task a continuation needs; leave out small talk. ' +
  'Write only the summary.';
/** Provider options that mark a summarizer call (the scripted model answers it with its deterministic summary). */
export const COMPACTION_OPTIONS = { crosstalk: { task: 'compaction' } } as const;
export const PREVIOUS_SUMMARY = 'Previous summary:\n';

export interface CompactionDeps {
  store: Store;
  bus: EventBus;
  metrics: Metrics;
  log: Logger;
  config: Pick<CrosstalkConfig, 'compaction' | 'models' | 'session'>;
  usage?: Usage;
  telemetry?: Telemetry;
}

export interface CompactionTarget {
  sessionKey: string;
  agentId: string;
  /** The spec whose window and price apply. */
  modelSpec: string;
  model: LanguageModelV4;
  /** The run the events belong to; a one-off id is used when none (sessions.compact). */
  runId?: string;
  system: string;
  tools: LanguageModelV4FunctionTool[];
  signal?: AbortSignal;
  traceparent?: string;
}

export interface CompactionResult {
  status: 'ok' | 'skipped' | 'error';
  tokensBefore: number;
  tokensAfter: number;
  error?: string;
}

interface ContextView {
  /** The summary row (if any) then the rows after it, oldest first. */
  rows: TranscriptMessage[];
  summary?: TranscriptMessage;
  /** More rows follow the summary than the window holds. */
  truncated: boolean;
}

const throughOf = (m: TranscriptMessage | undefined) => Number((m?.meta as { through?: unknown } | undefined)?.through ?? 0);

/** The context of a session: its newest compaction summary and the rows after it (at most `contextMessages` of them). */
export async function contextView(store: Store, sessionKey: string, n: number, messageCount?: number): Promise<ContextView> {
  // `messageCount` (the session row's, when the caller has it) lets the store use its cached rows on PostgreSQL
  // and spares a count of the whole session below.
  const window = await store.contextRows(sessionKey, n, store.dialect === 'postgres' ? messageCount : undefined);
  let summary: TranscriptMessage | undefined = window.findLast((r) => r.kind === 'compaction');
  if (!summary && window.length >= n) {
    const row = await store.newestCompaction(sessionKey);
    if (row) summary = toTranscriptMessage(row);
  }
  const through = throughOf(summary);
  const after = window.filter((r) => r.id > through && r.kind !== 'compaction');
  let truncated = false;
  if (window.length >= n && !summary && messageCount !== undefined) truncated = messageCount > after.length;
  else if (window.length >= n && !window.some((r) => r.id <= through)) {
    const r = await store.db
      .selectFrom('messages')
      .select((eb) => eb.fn.countAll<number>().as('c'))
      .where('session_key', '=', sessionKey)
      .where('id', '>', through)
      .where('kind', '!=', 'compaction')
      .executeTakeFirst();
    truncated = Number(r?.c ?? 0) > after.length;
  }
  return { rows: summary ? [summary, ...after] : after, summary, truncated };
}

/**
 * Mirrors (a `send` into the session, a post mirrored from elsewhere) written into a session after row `afterId` by
 * anything but `runId`: a run whose step waited on its tool calls reads them before its next model step (CONTRACT §5
 * "Context"), after the step's results. Inter-session messages and callbacks are not read here: they reach a running
 * run as steers, or start their own.
 */
export async function lateMirrors(store: Store, sessionKey: string, afterId: number, runId: string): Promise<TranscriptMessage[]> {
  const rows = await store.db
    .selectFrom('messages')
    .selectAll()
    .where('session_key', '=', sessionKey)
    .where('id', '>', afterId)
    .where('kind', '=', 'mirror')
    .where((eb) => eb.or([eb('run_id', 'is', null), eb('run_id', '!=', runId)]))
    .orderBy('id')
    .execute();
  return rows.map(toTranscriptMessage);
}

// Provider-reported input tokens over our estimate, per model spec, so the next estimate is corrected.
const ratios = new Map<string, number>();

/** Corrects later estimates for `spec` with what the provider reported for a prompt we had estimated at `estimated`. */
export function observeUsage(spec: string, estimated: number, reportedInput: number | undefined): void {
  if (!reportedInput || estimated <= 0) return;
  const r = Math.min(1000, Math.max(0.05, reportedInput / estimated));
  ratios.set(spec, r);
}

export function correctedEstimate(spec: string, raw: number): number {
  return Math.round(raw * (ratios.get(spec) ?? 1));
}

/** Where the kept rows start: the newest `keepRecent`, widened so no unanswered call, pending approval or call/result pair is split. */
export function keptStart(rows: TranscriptMessage[], keepRecent: number, pendingCalls: Set<string>): number {
  let s = Math.max(0, rows.length - keepRecent);
  const callIndex = new Map<string, number>();
  const answered = new Set<string>();
  rows.forEach((r, i) => {
    if (r.kind === 'tool_call' && r.tool) callIndex.set(r.tool.callId, i);
    if (r.kind === 'tool_result' && r.tool) answered.add(r.tool.callId);
  });
  for (const [callId, i] of callIndex) if ((!answered.has(callId) || pendingCalls.has(callId)) && i < s) s = i;
  // The request being answered stays verbatim.
  const lastUser = rows.findLastIndex((r) => r.role === 'user');
  if (lastUser >= 0 && lastUser < s) s = lastUser;
  for (let changed = true; changed; ) {
    changed = false;
    for (let i = s; i < rows.length; i++) {
      const r = rows[i]!;
      const ci = r.kind === 'tool_result' && r.tool ? callIndex.get(r.tool.callId) : undefined;
      if (ci !== undefined && ci < s) {
        s = ci;
        changed = true;
      }
    }
  }
  // Never start the kept part in the middle of one step's tool calls.
  while (s > 0 && rows[s]!.kind === 'tool_call' && rows[s - 1]!.kind === 'tool_call' && rows[s]!.runId === rows[s - 1]!.runId) s--;
  return s;
}

/** One row as the summarizer reads it: one text part per row. */
export function renderRow(r: TranscriptMessage): string {
  const who = r.author.name ?? r.author.id;
  switch (r.kind) {
    case 'tool_call':
      return `[tool call ${r.tool?.name}] ${JSON.stringify(r.tool?.args ?? null)}`;
    case 'tool_result':
      return `[tool result ${r.tool?.name}] ${JSON.stringify(r.tool?.result ?? null)}`;
    case 'inter_session':
      return `[message from ${who}] ${r.content}`;
    case 'agent_callback_result':
      return `[callback from ${who}] ${r.content}`;
    default:
      return `[${r.role === 'user' ? 'user' : r.role === 'assistant' ? who : r.kind}] ${r.content}`;
  }
}

const PAGE = 500;

/** Rows of a session with through < id <= upTo, oldest first, a page at a time. */
async function* rowsBetween(store: Store, sessionKey: string, through: number, upTo: number): AsyncGenerator<TranscriptMessage> {
  let after = through;
  for (;;) {
    const page = await store.db
      .selectFrom('messages')
      .selectAll()
      .where('session_key', '=', sessionKey)
      .where('id', '>', after)
      .where('id', '<=', upTo)
      .where('kind', '!=', 'compaction')
      .orderBy('id')
      .limit(PAGE)
      .execute();
    for (const r of page) yield toTranscriptMessage(r);
    if (page.length < PAGE) return;
    after = page[page.length - 1]!.id;
  }
}

export class Compactor {
  constructor(private readonly d: CompactionDeps) {}

  windowOf(spec: string): number {
    return contextWindowFor(spec, this.d.config.models);
  }

  /** The estimated prompt size (corrected by what the provider last reported for this model). */
  estimate(t: Pick<CompactionTarget, 'modelSpec' | 'system' | 'tools'>, messages: PromptMessage[]): { raw: number; tokens: number } {
    const raw = promptSize(t.system, messages, t.tools);
    return { raw, tokens: correctedEstimate(t.modelSpec, raw) };
  }

  /**
   * Before a model step: compacts when the prompt passes the threshold (or more rows follow the summary than the window
   * holds), then rewrites `messages` in place. `result` is null when nothing was needed; then `raw` is the estimate of
   * `messages` as they are (`estimate`'s), for the step's span and the provider's correction.
   */
  async beforeStep(t: CompactionTarget, messages: PromptMessage[], o: { checkRowCount?: boolean } = {}): Promise<{ result: CompactionResult | null; raw?: number; through?: number }> {
    const { threshold } = this.d.config.compaction;
    const limit = Math.floor(this.windowOf(t.modelSpec) * threshold);
    const est = this.estimate(t, messages);
    const before = est.tokens;
    // Under the threshold, only a run's first step looks at the row count (a run adds few rows of its own).
    if (before <= limit && !o.checkRowCount) return { result: null, raw: est.raw };
    const view = await contextView(this.d.store, t.sessionKey, this.d.config.session.contextMessages);
    if (before <= limit && !view.truncated) return { result: null, raw: est.raw };
    const res = await this.compact(t, view, before);
    if (res.status === 'ok') {
      const fresh = await contextView(this.d.store, t.sessionKey, this.d.config.session.contextMessages);
      messages.splice(0, messages.length, ...toPromptMessages(fresh.rows, t.runId)); // the run's prompt as it ran: none of its held rows
      return { result: res, through: fresh.rows.reduce((n, m) => Math.max(n, m.id), 0) };
    } else if (res.status === 'error' || before > limit) {
      res.tokensAfter = this.trimToFit(t, messages, limit);
    }
    return { result: res };
  }

  /** The fallback: the newest messages that fit, cut only at a user turn so no call is parted from its result. */
  trimToFit(t: CompactionTarget, messages: PromptMessage[], limit: number): number {
    let est = this.estimate(t, messages).tokens;
    while (est > limit) {
      const nextUser = messages.findIndex((m, i) => i > 0 && m.role === 'user');
      if (nextUser <= 0) break;
      messages.splice(0, nextUser);
      est = this.estimate(t, messages).tokens;
    }
    return est;
  }

  /** `sessions.compact`, and the automatic trigger: summarize all but the newest `keepRecent` rows. */
  async compact(t: CompactionTarget, view?: ContextView, tokensBefore?: number): Promise<CompactionResult> {
    const { store, bus, metrics, log } = this.d;
    view ??= await contextView(store, t.sessionKey, this.d.config.session.contextMessages);
    const before = tokensBefore ?? this.estimate(t, toPromptMessages(view.rows)).tokens;
    const after = view.summary ? view.rows.slice(1) : view.rows;
    const pending = new Set((await store.pendingApprovals({ sessionKey: t.sessionKey })).map((a) => a.call_id));
    const s = keptStart(after, this.d.config.compaction.keepRecent, pending);
    const upTo = s > 0 ? after[s - 1]!.id : view.truncated && after[0] ? after[0].id - 1 : 0;
    if (upTo <= throughOf(view.summary)) return { status: 'skipped', tokensBefore: before, tokensAfter: before };

    const own = !t.runId;
    const runId = t.runId ?? `cmp_${crypto.randomUUID()}`;
    if (own) bus.registerRun(runId, t.sessionKey, 0);
    const span = this.d.telemetry?.start('compaction', t.traceparent, { 'crosstalk.session_key': t.sessionKey, 'crosstalk.compaction.tokens_before': before });
    try {
      // Every phase carries both counts (CONTRACT §4); until the summary is written, after is before (as on error).
      bus.emit(runId, 'compaction', { phase: 'start', tokensBefore: before, tokensAfter: before });
      try {
        const { summary, count, last } = await this.summarize(t, runId, view.summary?.content, throughOf(view.summary), upTo);
        const kept = after.slice(s);
        const tokensAfter = this.estimate(t, toPromptMessages([{ ...(view.summary ?? after[0]!), kind: 'compaction', role: 'system', content: summary }, ...kept])).tokens;
        const [row] = await store.appendMessages(
          [{ sessionKey: t.sessionKey, role: 'system', kind: 'compaction', content: summary, runId: t.runId ?? null, author: { type: 'system', id: 'compaction' }, meta: { tokensBefore: before, tokensAfter, through: last, summarized: count } }],
          { run: !!t.runId && bus.leasedSession(t.runId) === t.sessionKey }, // a run's own compaction is fenced; sessions.compact is not
        );
        bus.emit(runId, 'message', { message: row! });
        bus.emit(runId, 'compaction', { phase: 'end', tokensBefore: before, tokensAfter, through: last, summarized: count });
        metrics.compactions.inc({ agent: t.agentId, outcome: 'ok' });
        this.d.telemetry?.end(span, undefined, { 'crosstalk.compaction.tokens_after': tokensAfter, 'crosstalk.compaction.summarized': count });
        return { status: 'ok', tokensBefore: before, tokensAfter };
      } catch (e) {
        const error = errorMessage(e);
        log.warn({ sessionKey: t.sessionKey, err: error }, 'compaction failed: falling back to the newest rows that fit');
        bus.emit(runId, 'compaction', { phase: 'error', tokensBefore: before, tokensAfter: before, error });
        metrics.compactions.inc({ agent: t.agentId, outcome: 'error' });
        this.d.telemetry?.end(span, error);
        return { status: 'error', tokensBefore: before, tokensAfter: before, error };
      }
    } finally {
      if (own) bus.unregisterRun(runId);
    }
  }

  /** Summarizes rows (through, upTo] in chunks that fit half the window, each chunk folded into the running summary. */
  private async summarize(t: CompactionTarget, runId: string, previous: string | undefined, through: number, upTo: number) {
    const budget = Math.floor(this.windowOf(t.modelSpec) / 2);
    let summary = previous;
    let count = 0;
    let last = through;
    let chunk: string[] = [];
    let size = 0;
    const flush = async () => {
      if (!chunk.length) return;
      summary = await this.callSummarizer(t, runId, summary, chunk);
      chunk = [];
      size = 0;
    };
    for await (const r of rowsBetween(this.d.store, t.sessionKey, through, upTo)) {
      const text = renderRow(r);
      const tokens = correctedEstimate(t.modelSpec, estimateTokens(text));
      if (size + tokens > budget) await flush();
      chunk.push(text.length > budget * 4 ? `${text.slice(0, budget * 4)}…` : text);
      size += tokens;
      count++;
      last = r.id;
    }
    await flush();
    if (summary === undefined) throw new Error('nothing to summarize');
    return { summary, count, last };
  }

  private async callSummarizer(t: CompactionTarget, runId: string, previous: string | undefined, rows: string[]): Promise<string> {
    const parts = [...(previous ? [PREVIOUS_SUMMARY + previous] : []), ...rows].map((text) => ({ type: 'text' as const, text }));
    const res = await t.model.doGenerate({
      prompt: [{ role: 'system', content: COMPACTION_SYSTEM }, { role: 'user', content: parts }],
      providerOptions: COMPACTION_OPTIONS,
      abortSignal: t.signal,
    });
    const text = res.content
      .filter((c) => c.type === 'text')
      .map((c) => (c as { text: string }).text)
      .join('')
      .trim();
    if (this.d.usage && res.usage) {
      await this.d.usage.record({
        runId,
        sessionKey: t.sessionKey,
        agentId: t.agentId,
        model: t.modelSpec,
        kind: 'compaction',
        tokens: { inputTokens: res.usage.inputTokens?.total ?? 0, outputTokens: res.usage.outputTokens?.total ?? 0, cachedTokens: res.usage.inputTokens?.cacheRead ?? 0 },
      });
    }
    if (!text) throw new Error('the summarizer answered no text');
    return text;
  }
}
