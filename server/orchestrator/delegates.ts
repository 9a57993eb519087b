// Delegates you can come back to (seed 002): delegate_agent runs, follow-ups by conversation_id, list/preview/dismiss.
import { asciiLower } from '../sessions/keys';
import { carryTrust } from '../trust/trust';
import { carryTree } from './budget';
import crypto from 'node:crypto';
import type { AgentConfig } from '../config';
import { CrosstalkError, runErrorCode } from '../errors';
import { isCutOff } from '../store/pg-errors';
import type { EventBus } from '../events/bus';
import type { TranscriptMessage } from '../events/types';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics';
import { decodeCursor, encodeCursor } from '../store/cursor';
import type { SessionRow } from '../store/schema';
import { type Store, toTranscriptMessage } from '../store/store';
import { DelegateCache } from './delegate-cache';
import type { MessageOrigin } from './callbacks';
import { derivedId, handoverOf, type Orchestrator, SHUTDOWN } from './orchestrator';
import { newDeliveryId } from '../store/deliveries';
import { appendTranscript } from './transcript';

export interface DelegateCaller {
  sessionKey: string;
  agent: AgentConfig;
  /** The parent's run and tool call, when a model called the tool (absent for delegates.resume). */
  runId?: string;
  callId?: string;
  signal?: AbortSignal;
  /** The parent run's origin: its trust passes to the delegate's runs. */
  origin?: Record<string, unknown>;
  /** W3C traceparent of the calling tool call: the delegate's runs join the caller's trace. */
  traceparent?: string;
}

export interface DelegateRequest {
  agent_id?: string;
  prompt?: string;
  mode?: 'standard' | 'detached';
  batch?: Array<{ agent_id: string; prompt: string }>;
  conversation_id?: string;
  cwd?: string;
}

import type { DelegateRunResult, DelegateSummary } from '../gateway/types';
export type { DelegateRunResult, DelegateSummary };

const STANDARD_WAIT_MS = 30 * 60_000;
const isDelegateKey = (k: string) => k.includes(':subagent:');

export class Delegates {
  readonly cache = new DelegateCache();
  /** Delegate conversations with a run in flight, per parent session (follow-up busy check, concurrency limit). */
  private running = new Map<string, Set<string>>();
  previewHits = { cache: 0, store: 0 };

  constructor(private readonly d: { store: Store; bus: EventBus; orchestrator: Orchestrator; metrics: Metrics; log: Logger }) {
    d.bus.onEvent((ev) => {
      if (ev.stream === 'message' && isDelegateKey(ev.sessionKey)) this.cache.add(ev.data.message as TranscriptMessage);
    });
  }

  stats() {
    return this.d.store.delegateStats();
  }

  /** delegate_agent: new delegate(s) or a follow-up. Throws CrosstalkError; the tool turns it into data. */
  async delegate(caller: DelegateCaller, req: DelegateRequest): Promise<DelegateRunResult | { status: 'ok'; runs: DelegateRunResult[] }> {
    const mode = req.mode ?? 'standard';
    if (req.batch && req.conversation_id) throw new CrosstalkError('invalid_request', 'conversation_id cannot be combined with batch');
    if (req.batch) {
      if (!req.batch.length) throw new CrosstalkError('invalid_request', 'batch must not be empty');
      for (const b of req.batch) if (!b.prompt?.trim()) throw new CrosstalkError('invalid_request', 'every batch item needs a prompt');
      const { parent, claims } = await this.checkNew(caller, req.batch.map((b) => b.agent_id));
      const runs = await Promise.all(req.batch.map((b, i) => this.startNew(caller, parent, b.agent_id, b.prompt, mode, req.cwd, claims[i]!, String(i))));
      return { status: 'ok', runs };
    }
    if (!req.prompt?.trim()) throw new CrosstalkError('invalid_request', 'prompt is required');
    if (req.conversation_id) return this.followUp(caller, req.conversation_id, req.prompt, mode, req.agent_id);
    if (!req.agent_id) throw new CrosstalkError('invalid_request', 'agent_id is required for a new delegate');
    const { parent, claims } = await this.checkNew(caller, [req.agent_id]);
    return this.startNew(caller, parent, req.agent_id, req.prompt, mode, req.cwd, claims[0]!);
  }

  /**
   * Checks a new delegate may start and claims its concurrency places in the same synchronous step (no await between
   * the count and the claim), so parallel calls in one model step cannot all pass the check.
   */
  private async checkNew(caller: DelegateCaller, agentIds: string[]): Promise<{ parent: SessionRow; claims: string[] }> {
    for (const id of agentIds) if (!this.d.orchestrator.agent(id)) throw new CrosstalkError('unknown_agent', `unknown agent ${id}`);
    const parent = await this.d.store.getSession(caller.sessionKey);
    if (!parent) throw new CrosstalkError('unknown_session', `no session ${caller.sessionKey}`);
    const depth = parent.spawn_depth + 1;
    if (depth > caller.agent.limits.maxDelegateDepth) throw new CrosstalkError('limit_exceeded', `delegate nesting depth ${depth} exceeds the limit of ${caller.agent.limits.maxDelegateDepth}`);
    const busy = this.running.get(caller.sessionKey)?.size ?? 0;
    if (busy + agentIds.length > caller.agent.limits.maxDelegatesPerParent)
      throw new CrosstalkError('limit_exceeded', `at most ${caller.agent.limits.maxDelegatesPerParent} delegates may run at once for one parent (${busy} running)`);
    let set = this.running.get(caller.sessionKey);
    if (!set) this.running.set(caller.sessionKey, (set = new Set()));
    const claims = agentIds.map(() => `claim:${crypto.randomUUID()}`);
    for (const c of claims) set.add(c);
    return { parent, claims };
  }

  private async startNew(caller: DelegateCaller, parent: SessionRow, agentId: string, prompt: string, mode: 'standard' | 'detached', cwd: string | undefined, claim: string, slot = '') {
    // Derived from the parent's run and call when a model called the tool: a re-drive finds the same delegate.
    const id = caller.runId && caller.callId ? derivedId(caller.runId, caller.callId, slot).slice(0, 16) : crypto.randomUUID().replace(/-/g, '').slice(0, 16);
    const key = `agent:${agentId}:subagent:${id}`;
    try {
      await this.d.store.ensureSession({ key, agentId, kind: 'subagent', parentKey: caller.sessionKey, spawnDepth: parent.spawn_depth + 1, meta: { mode, cwd: cwd ?? null, ownerAgentId: caller.agent.id } });
    } catch (e) {
      this.releaseClaim(caller.sessionKey, claim);
      throw e;
    }
    this.cache.create(key);
    return this.run(caller, key, agentId, prompt, mode, false, claim);
  }

  private releaseClaim(parentKey: string, claim: string) {
    const set = this.running.get(parentKey);
    set?.delete(claim);
    if (set && !set.size) this.running.delete(parentKey);
  }

  private async owned(parentKey: string, conversationId: string): Promise<SessionRow> {
    const s = await this.d.store.getSession(asciiLower(conversationId));
    if (!s || s.kind !== 'subagent' || s.parent_key !== parentKey || s.dismissed_at)
      throw new CrosstalkError('unknown_conversation', `no delegate conversation ${conversationId} for ${parentKey}`);
    return s;
  }

  private async followUp(caller: DelegateCaller, conversationId: string, prompt: string, mode: 'standard' | 'detached', agentId?: string) {
    const s = await this.owned(caller.sessionKey, conversationId);
    if (agentId && agentId !== s.agent_id) throw new CrosstalkError('invalid_request', `conversation ${s.key} belongs to agent ${s.agent_id}, not ${agentId}`);
    // A re-driven call whose follow-up was accepted before (its run id derives from the call) finds that run again:
    // it is the call's own, not a reason to refuse it.
    const planned = caller.runId && caller.callId ? `run_${derivedId(caller.runId, caller.callId, s.key)}` : undefined;
    const again = !!(planned && (await this.d.store.getRun(planned)));
    if (!again && (await this.isRunning(s.key))) throw new CrosstalkError('agent_busy', 'delegate still running');
    // Looked at once more with no await before `run` claims the delegate: two follow-ups to it in one model step both
    // passed the look above (each awaited it before either claimed), and both were accepted.
    if (!again && this.isRunningHere(s.key)) throw new CrosstalkError('agent_busy', 'delegate still running');
    return this.run(caller, s.key, s.agent_id, prompt, mode, true);
  }

  /** Whether a delegate is busy: a call to it in flight here, or a run of it in flight on any process. */
  private async isRunning(key: string): Promise<boolean> {
    return this.isRunningHere(key) || (await this.d.store.activeRunOf(key)) !== undefined;
  }

  private isRunningHere(key: string): boolean {
    for (const set of this.running.values()) if (set.has(key)) return true;
    return this.d.orchestrator.isActive(key);
  }

  private async run(caller: DelegateCaller, key: string, agentId: string, prompt: string, mode: 'standard' | 'detached', followUp: boolean, claim?: string): Promise<DelegateRunResult> {
    const { store, bus, orchestrator } = this.d;
    let set = this.running.get(caller.sessionKey);
    if (!set) this.running.set(caller.sessionKey, (set = new Set()));
    set.add(key); // claimed before the first await below, so a concurrent follow-up sees it
    if (claim) set.delete(claim); // the concurrency claim checkNew took is now this key
    const release = () => {
      set!.delete(key);
      if (!set!.size) this.running.delete(caller.sessionKey);
    };
    try {
      await store.touchDelegate(key);
      const origin: MessageOrigin = {
        from: { sessionKey: caller.sessionKey, ...(caller.runId ? { runId: caller.runId } : {}), agentId: caller.agent.id },
        delegate: { conversation_id: key, agent_id: agentId, mode, followUp },
        ...(mode === 'detached' ? { callback: true } : {}),
        ...carryTrust(caller.origin),
        // The delegate spends from the caller's request tree (delegates.resume from outside starts a tree of its own).
        ...(caller.runId ? carryTree({ id: caller.runId, agent: caller.agent, origin: caller.origin }) : {}),
        ...(caller.traceparent ? { traceparent: caller.traceparent } : {}),
      };
      // The hand-off's record (CONTRACT §9 `delegate`): its id, like the run's, derives from the call (and the batch slot).
      const derived = caller.runId && caller.callId ? derivedId(caller.runId, caller.callId, key) : undefined;
      const deliveryId = derived ? `dlv_${derived}` : newDeliveryId();
      const plannedRun = derived ? `run_${derived}` : undefined;
      await store.createDeliveries([{ id: deliveryId, kind: 'delegate', from: { sessionKey: caller.sessionKey, runId: caller.runId ?? null, callId: caller.callId ?? null }, to: { sessionKey: key }, runId: plannedRun ?? null }]);
      origin.deliveryId = deliveryId;
      // Live delegate events stream to the parent's tool call while it waits (standard mode).
      const sub = mode === 'standard' && caller.runId && caller.callId ? bus.subscribe({ sessionKey: key }) : null;
      let res;
      try {
        res = await orchestrator.submit(
          key,
          { content: prompt, kind: 'inter_session', author: { type: 'agent', id: caller.agent.id, name: caller.agent.name }, meta: { fromSessionKey: caller.sessionKey, ...(caller.runId ? { fromRunId: caller.runId } : {}), ...(caller.callId ? { fromCallId: caller.callId } : {}), deliveryId, delegate: true, ...(followUp ? { followUp: true } : {}) } },
          { origin, queueMode: 'followup', ...(plannedRun ? { runId: plannedRun } : {}) },
        );
      } catch (e) {
        sub?.close();
        // Cut off by a lost PostgreSQL connection (or a lock conflict): not refused; the run's re-drive makes the call again.
        if (!isCutOff(e)) await store.advanceDeliveries([deliveryId], 'failed', { error: { code: (e as { code?: string }).code ?? 'internal', message: (e as Error).message }, runId: null });
        throw e;
      }
      const runId = res.runId;
      if (followUp) await this.parentRow(caller, 'delegate_follow_up_started', prompt, { conversation_id: key, agent_id: agentId, run_id: runId, mode });
      if (mode === 'detached') {
        void orchestrator.wait(runId, 24 * 3600_000).then(async (w) => {
          release();
          // `timeout`: this process stopped waiting (a graceful stop's last step), not the follow-up's end.
          if (followUp && w.status !== 'timeout') await this.parentRow({ ...caller, runId: undefined }, 'delegate_follow_up_completed', w.response ?? w.error ?? '', { conversation_id: key, agent_id: agentId, run_id: runId, status: w.status, label: '(follow-up)' });
        });
        return { status: 'accepted', run_id: runId, conversation_id: key, agent_id: agentId, delivery_id: deliveryId };
      }
      if (sub) void this.forward(sub, caller, runId, key);
      // The caller's run interrupted or cancelled: this delegate run is cancelled, wherever it runs, and never the
      // conversation's active run, which may be another (a detached delegate of an earlier turn, whose callback is
      // owed). The caller's run stopped for a handover (SHUTDOWN): the wait ends and the delegate run goes on; the
      // caller's call, re-driven, finds the same run (its id derives from the call) and waits for it again.
      const signal = caller.signal;
      const onAbort = () => {
        if (signal?.reason !== SHUTDOWN) void orchestrator.cancel(runId, 'the calling run was interrupted').catch(() => undefined);
      };
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
      const w = await orchestrator.wait(runId, STANDARD_WAIT_MS, handoverOf(signal));
      signal?.removeEventListener('abort', onAbort);
      sub?.close();
      release();
      // Handed over: nothing of this call is written here (its re-drive writes it, once).
      if (signal?.aborted && signal.reason === SHUTDOWN) return { status: 'error', run_id: runId, conversation_id: key, agent_id: agentId, delivery_id: deliveryId, error: { code: 'interrupted', message: 'run interrupted' } };
      if (followUp) await this.parentRow(caller, 'delegate_follow_up_completed', w.response ?? w.error ?? '', { conversation_id: key, agent_id: agentId, run_id: runId, status: w.status, label: '(follow-up)' });
      if (w.status === 'ok') return { status: 'ok', run_id: runId, conversation_id: key, agent_id: agentId, delivery_id: deliveryId, response: w.response ?? '' };
      return { status: 'error', run_id: runId, conversation_id: key, agent_id: agentId, delivery_id: deliveryId, error: { code: w.status === 'timeout' ? 'timeout' : runErrorCode(w.error), message: w.error ?? `delegate ${w.status}` } };
    } catch (e) {
      release();
      throw e;
    }
  }

  private async forward(sub: ReturnType<EventBus['subscribe']>, caller: DelegateCaller, runId: string, key: string) {
    for (;;) {
      const ev = await sub.next();
      if (!ev) return;
      if (ev.runId !== runId) continue;
      try {
        this.d.bus.emit(caller.runId!, 'tool', { phase: 'update', name: 'delegate_agent', callId: caller.callId, delegate: { conversation_id: key, run_id: runId, seq: ev.seq, stream: ev.stream, data: ev.data } });
      } catch {
        return; // the parent run has ended
      }
      if (ev.stream === 'lifecycle' && (ev.data.phase === 'end' || ev.data.phase === 'error')) return;
    }
  }

  private async parentRow(caller: DelegateCaller, kind: 'delegate_follow_up_started' | 'delegate_follow_up_completed', content: string, meta: Record<string, unknown>) {
    if (!(await this.d.store.getSession(caller.sessionKey))) return;
    await appendTranscript(this.d.store, this.d.bus, [{ sessionKey: caller.sessionKey, role: 'system', kind, content, runId: caller.runId ?? null, author: { type: 'agent', id: String(meta.agent_id) }, meta }], caller.runId);
  }

  async list(parentKey: string, o: { cursor?: string; limit?: number }): Promise<{ sessions: DelegateSummary[]; next_cursor: string | null }> {
    const limit = o.limit ?? 3;
    const after = o.cursor ? (decodeCursor(o.cursor, 'delegates', parentKey, 2) as [string, string]) : undefined;
    const rows = await this.d.store.listDelegates({ parentKey, limit: limit + 1, after });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const live = await this.d.store.activeAmong(page.filter((r) => !this.isRunningHere(r.key)).map((r) => r.key));
    return {
      sessions: page.map((r) => {
        const meta = (r.meta ? JSON.parse(r.meta) : {}) as { mode?: string; cwd?: string | null };
        return {
          conversation_id: r.key,
          agent_id: r.agent_id,
          mode: meta.mode ?? 'standard',
          cwd: meta.cwd ?? null,
          last_interacted_at: r.last_interacted_at ?? r.created_at,
          status: this.isRunningHere(r.key) || live.has(r.key) ? 'running' : 'idle',
          turns: r.turns,
          bytes: r.bytes,
        };
      }),
      next_cursor: rows.length > limit && last ? encodeCursor('delegates', parentKey, [last.last_interacted_at ?? last.created_at, last.key]) : null,
    };
  }

  /** Newest first: the live cache answers when it can, the store answers the rest (and after a restart). */
  async messages(parentKey: string, conversationId: string, o: { cursor?: string; limit?: number }) {
    const limit = o.limit ?? 3;
    const key = asciiLower(conversationId);
    const beforeId = o.cursor ? (decodeCursor(o.cursor, 'delegate_messages', key, 1)[0] as number) : undefined;
    await this.owned(parentKey, key);
    const cached = this.cache.page(key, limit, beforeId);
    let rows: TranscriptMessage[];
    let more: boolean;
    if (cached) {
      this.previewHits.cache++;
      ({ rows, more } = cached);
    } else {
      this.previewHits.store++;
      const stored = (await this.d.store.history({ sessionKey: key, limit: limit + 1, beforeId, includeTools: true })).map(toTranscriptMessage);
      more = stored.length > limit;
      rows = stored.slice(0, limit);
      if (beforeId === undefined && !this.cache.has(key)) this.cache.seed(key, stored, !more);
    }
    const last = rows[rows.length - 1];
    return { messages: rows, next_cursor: more && last ? encodeCursor('delegate_messages', key, [last.id]) : null };
  }

  async dismiss(parentKey: string, conversationId: string): Promise<{ status: 'ok' }> {
    const s = await this.owned(parentKey, conversationId);
    this.d.orchestrator.abortActive(s.key);
    await this.d.store.patchSession(s.key, { dismissed_at: new Date().toISOString() });
    this.cache.drop(s.key);
    return { status: 'ok' };
  }
}
